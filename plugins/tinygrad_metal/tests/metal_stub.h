// A stand-in for <metal_stdlib>: declares only what MetalRenderer emits, so `clang++ -fsyntax-only` can check rendered
// kernels on any host (compiled for arm64-apple-macos: _Float16 exists there, and long is 64 bits as in MSL).
// It checks C++: declarations, types of expressions, overloads we call, bitcast sizes, address spaces of pointers
// passed around. It cannot check what only the Metal compiler knows (see the plugin's README).
#pragma once
#define kernel
#define device __attribute__((address_space(1)))
#define constant __attribute__((address_space(2)))
#define threadgroup __attribute__((address_space(3)))
#define thread
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")

namespace metal {
typedef _Float16 half;
typedef _Float16 bfloat;   // MSL 3.1's bfloat, checked as a 16-bit float (a class type would break device-space assignment)
typedef unsigned char uchar; typedef unsigned short ushort; typedef unsigned int uint; typedef unsigned long ulong;

template <typename T, int N> struct vec_fields;
template <typename T> struct vec_fields<T, 2> { T x, y; };
template <typename T> struct vec_fields<T, 3> { T x, y, z; };
template <typename T> struct vec_fields<T, 4> { T x, y, z, w; };
template <bool B> struct enable_if_n {};
template <> struct enable_if_n<true> { typedef void type; };
template <typename T, int N> struct vec : vec_fields<T, N> {
  vec() = default;
  explicit vec(T s);
  template <typename... A, typename = typename enable_if_n<sizeof...(A) == N>::type> vec(A... a);   // one scalar per lane
  T &operator[](int i);
  T operator[](int i) const;
};
#define METAL_VEC_OP(R, op) template <typename T, int N> vec<R, N> operator op(vec<T, N> a, vec<T, N> b);
METAL_VEC_OP(T, +) METAL_VEC_OP(T, -) METAL_VEC_OP(T, *) METAL_VEC_OP(T, /) METAL_VEC_OP(T, %) METAL_VEC_OP(T, &) METAL_VEC_OP(T, |)
METAL_VEC_OP(T, ^) METAL_VEC_OP(bool, <) METAL_VEC_OP(bool, !=) METAL_VEC_OP(bool, ==)

#define METAL_VEC_TYPES(t) typedef vec<t, 2> t##2; typedef vec<t, 3> t##3; typedef vec<t, 4> t##4;
METAL_VEC_TYPES(float) METAL_VEC_TYPES(half) METAL_VEC_TYPES(bfloat) METAL_VEC_TYPES(int) METAL_VEC_TYPES(uint)
METAL_VEC_TYPES(short) METAL_VEC_TYPES(ushort) METAL_VEC_TYPES(char) METAL_VEC_TYPES(uchar) METAL_VEC_TYPES(long)
METAL_VEC_TYPES(ulong) METAL_VEC_TYPES(bool)

template <typename T, typename U> T as_type(U x) {
  static_assert(sizeof(T) == sizeof(U), "as_type: source and destination sizes differ");   // Metal rejects these too
  return __builtin_bit_cast(T, x);
}
float sqrt(float); half sqrt(half); float trunc(float); half trunc(half);

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
void threadgroup_barrier(mem_flags);

template <typename T, int R, int C> struct simdgroup_matrix { thread vec<T, 2> &thread_elements(); };
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
template <typename D, typename A, typename B, typename C>
void simdgroup_multiply_accumulate(thread simdgroup_matrix<D, 8, 8> &d, thread const simdgroup_matrix<A, 8, 8> &a,
                                   thread const simdgroup_matrix<B, 8, 8> &b, thread const simdgroup_matrix<C, 8, 8> &c);
}  // namespace metal
