void E_16(float* data0, float* data1, float* data2) {
  for (int ridx0 = 0; ridx0 < 16; ridx0++) {
    float val0 = data1[ridx0];
    float val1 = data2[ridx0];
    data0[ridx0] = (val0+val1);
  }
}
