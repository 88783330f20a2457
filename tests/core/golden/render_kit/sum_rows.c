void r_32_64(float* data0, float* data1) {
  float acc0[1];
  for (int ridx0 = 0; ridx0 < 32; ridx0++) {
    acc0[0] = 0.0f;
    int alu0 = (ridx0*64);
    for (int ridx1 = 0; ridx1 < 64; ridx1++) {
      float val0 = acc0[0];
      float val1 = data1[(alu0+ridx1)];
      acc0[0] = (val0+val1);
    }
    float val2 = acc0[0];
    data0[ridx0] = val2;
  }
}
