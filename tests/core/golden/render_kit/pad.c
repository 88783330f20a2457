void E_13(float* data0, float* data1) {
  for (int ridx0 = 0; ridx0 < 13; ridx0++) {
    _Bool alu0 = (((ridx0<2)!=1)&(ridx0<10));
    float val0 = (alu0?data1[(ridx0+-2)]:0.0f);
    data0[ridx0] = ((alu0?val0:0.0f)+1.0f);
  }
}
