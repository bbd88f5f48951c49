// Package diagram draws the notebooks' pictures of ideas as SVG: a warp's addresses coalescing into
// sectors, the RWKV triangle of work, the elementwise template's 16-byte packs and grid-stride loop,
// SGEMM's block, warp and lane tiles, bank conflicts and the XOR swizzle, the mma.sync and wgmma
// fragments' lane maps, the online softmax merge, a cluster's distributed shared memory, Welford's
// triples merged by Chan's formula, im2col and the pool windows, the GIoU of two boxes
// (intersection, union, enclosing box), the trilinear cell, the TMA ring, and the guards a reader's
// kernel passes from the cell to the GPU with the mistakes each one catches.
//
// Every fact a diagram shows (sectors touched, passes of a shared-memory access, which lane holds
// an element, which thread takes a pack, the areas of a GIoU, the weights of a corner, when a stage
// is reloaded, which guard stops which mistake and by what rule) comes from a function of facts.go,
// tested against the rule it draws; figures.go only lays them out. cmd/diagrams writes the files to
// notebooks/figures/, and the package's test fails when a committed file differs from the code's.
package diagram
