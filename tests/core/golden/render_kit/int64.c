void E_16(long* data0, long* data1) {
  for (int ridx0 = 0; ridx0 < 16; ridx0++) {
    long val0 = data1[ridx0];
    data0[ridx0] = (val0*1099511627776ll);
  }
}
