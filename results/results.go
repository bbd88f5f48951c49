// Package results holds the recorded results of a real GPU run of the reproduce command: one JSON
// receipt per lesson (<lesson>.json), with report.md and the plots beside them. The no-GPU mode shows
// these, labelled with the device and the date they were measured on. gpus.json beside them is the
// record of every notebook run under every GPU profile (cmd/gpus, lessons/matrix), and sanitize.json
// the recorded sanitizer pass (cmd/sanitize, helpers/sanitize).
package results

import "embed"

// FS holds the recorded JSON runs.
//
//go:embed *.json
var FS embed.FS

// Profiles holds the recorded Nsight Compute profiles, profiles/<lesson>.json (cmd/profile,
// helpers/nsight).
//
//go:embed profiles
var Profiles embed.FS

// SASS holds the recorded SASS listings, sass/<lesson>.json (cmd/profile -sass, helpers/sass):
// the steps whose architecture an older NVRTC cannot compile for, shown in its place.
//
//go:embed sass
var SASS embed.FS

// H100 holds the same lessons, and KernelBench's problems, recorded earlier on an NVIDIA H100
// 80GB HBM3 (h100/<lesson>.json, with its report.md): the second recorded machine that compare
// sets beside the recorded run above and the reader's GPU.
//
//go:embed h100
var H100 embed.FS
