void E_n(float* data0, float* data1, const int var_n) {
  for (int ridx0 = 0; ridx0 < var_n; ridx0++) {
    float val0 = data1[ridx0];
    data0[ridx0] = (val0*2.0f);
  }
}
