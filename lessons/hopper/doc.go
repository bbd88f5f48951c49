// Package hopper is lesson 08: Hopper's tensor cores (compute capability 9.0: H100, H200, GH200),
// from lesson 03's mma.sync to cuBLAS's speed. C = A·B is built up one technique per step, each a
// file of kernels/hopper compiled for compute_90a:
//
//  1. wgmma from 128-byte-swizzled shared memory, through matrix descriptors;
//  2. TMA (tensor maps made by gpu.Session.NewTensorMap) into a ring of mbarrier-guarded stages;
//  3. warp specialization: a producer warpgroup and two consumers, with setmaxnreg;
//  4. clusters sharing B by TMA multicast, persistent blocks in L2-friendly bands, a TMA-store
//     epilogue (and variants that undo one change each);
//  5. float32 accuracy from three fp16 products (the split), any shape;
//  6. TF32, with B transposed and rounded first.
//
// Steps 1-4 take fp16 or bfloat16 (Problem), 5 and 6 float32 (AccurateProblem, lesson 03's
// problem). Every step's plan refuses, before anything runs, a GPU other than a Hopper (NeedHopper)
// and a shape it cannot take, naming the limit. Run measures every step beside cuBLAS in the same
// process; the notebook's cells are this package's functions (Intro, Overview, Walk, Try, ...).
//
// For a reader's own float32 matrices, Multiply runs the split on Hopper where it pays and lesson
// 03's Multiply elsewhere, and GPUOp is lesson 03's autograd op through it:
//
//	c, step, err := hopper.Multiply(env, a, m, k, b, k, n)
package hopper
