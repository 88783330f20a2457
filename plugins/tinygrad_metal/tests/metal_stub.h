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

// vectors: clang's ext_vector_type (.xyzw, [], arithmetic, device-space stores); MSL's `float4(a,b,c,d)` constructor
// becomes a compound literal through a function-like macro of the same name (a bare `float4` stays the type)
typedef float float2 __attribute__((ext_vector_type(2))); typedef float float3 __attribute__((ext_vector_type(3))); typedef float float4 __attribute__((ext_vector_type(4)));
typedef half half2 __attribute__((ext_vector_type(2))); typedef half half3 __attribute__((ext_vector_type(3))); typedef half half4 __attribute__((ext_vector_type(4)));
typedef bfloat bfloat2 __attribute__((ext_vector_type(2))); typedef bfloat bfloat3 __attribute__((ext_vector_type(3))); typedef bfloat bfloat4 __attribute__((ext_vector_type(4)));
typedef int int2 __attribute__((ext_vector_type(2))); typedef int int3 __attribute__((ext_vector_type(3))); typedef int int4 __attribute__((ext_vector_type(4)));
typedef uint uint2 __attribute__((ext_vector_type(2))); typedef uint uint3 __attribute__((ext_vector_type(3))); typedef uint uint4 __attribute__((ext_vector_type(4)));
typedef short short2 __attribute__((ext_vector_type(2))); typedef short short3 __attribute__((ext_vector_type(3))); typedef short short4 __attribute__((ext_vector_type(4)));
typedef ushort ushort2 __attribute__((ext_vector_type(2))); typedef ushort ushort3 __attribute__((ext_vector_type(3))); typedef ushort ushort4 __attribute__((ext_vector_type(4)));
typedef char char2 __attribute__((ext_vector_type(2))); typedef char char3 __attribute__((ext_vector_type(3))); typedef char char4 __attribute__((ext_vector_type(4)));
typedef uchar uchar2 __attribute__((ext_vector_type(2))); typedef uchar uchar3 __attribute__((ext_vector_type(3))); typedef uchar uchar4 __attribute__((ext_vector_type(4)));
typedef long long2 __attribute__((ext_vector_type(2))); typedef long long3 __attribute__((ext_vector_type(3))); typedef long long4 __attribute__((ext_vector_type(4)));
typedef ulong ulong2 __attribute__((ext_vector_type(2))); typedef ulong ulong3 __attribute__((ext_vector_type(3))); typedef ulong ulong4 __attribute__((ext_vector_type(4)));
#define float2(...) ((float2){__VA_ARGS__})
#define float3(...) ((float3){__VA_ARGS__})
#define float4(...) ((float4){__VA_ARGS__})
#define half2(...) ((half2){__VA_ARGS__})
#define half3(...) ((half3){__VA_ARGS__})
#define half4(...) ((half4){__VA_ARGS__})
#define bfloat2(...) ((bfloat2){__VA_ARGS__})
#define bfloat3(...) ((bfloat3){__VA_ARGS__})
#define bfloat4(...) ((bfloat4){__VA_ARGS__})
#define int2(...) ((int2){__VA_ARGS__})
#define int3(...) ((int3){__VA_ARGS__})
#define int4(...) ((int4){__VA_ARGS__})
#define uint2(...) ((uint2){__VA_ARGS__})
#define uint3(...) ((uint3){__VA_ARGS__})
#define uint4(...) ((uint4){__VA_ARGS__})
#define short2(...) ((short2){__VA_ARGS__})
#define short3(...) ((short3){__VA_ARGS__})
#define short4(...) ((short4){__VA_ARGS__})
#define ushort2(...) ((ushort2){__VA_ARGS__})
#define ushort3(...) ((ushort3){__VA_ARGS__})
#define ushort4(...) ((ushort4){__VA_ARGS__})
#define char2(...) ((char2){__VA_ARGS__})
#define char3(...) ((char3){__VA_ARGS__})
#define char4(...) ((char4){__VA_ARGS__})
#define uchar2(...) ((uchar2){__VA_ARGS__})
#define uchar3(...) ((uchar3){__VA_ARGS__})
#define uchar4(...) ((uchar4){__VA_ARGS__})
#define long2(...) ((long2){__VA_ARGS__})
#define long3(...) ((long3){__VA_ARGS__})
#define long4(...) ((long4){__VA_ARGS__})
#define ulong2(...) ((ulong2){__VA_ARGS__})
#define ulong3(...) ((ulong3){__VA_ARGS__})
#define ulong4(...) ((ulong4){__VA_ARGS__})

template <typename T, typename U> T as_type(U x) {
  static_assert(sizeof(T) == sizeof(U), "as_type: source and destination sizes differ");   // Metal rejects these too
  return __builtin_bit_cast(T, x);
}
float sqrt(float); half sqrt(half); float trunc(float); half trunc(half);

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2 };
void threadgroup_barrier(mem_flags);

template <typename T, int R, int C> struct simdgroup_matrix { T (&thread_elements())[2]; };
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
template <typename D, typename A, typename B, typename C>
void simdgroup_multiply_accumulate(thread simdgroup_matrix<D, 8, 8> &d, thread const simdgroup_matrix<A, 8, 8> &a,
                                   thread const simdgroup_matrix<B, 8, 8> &b, thread const simdgroup_matrix<C, 8, 8> &c);
}  // namespace metal
