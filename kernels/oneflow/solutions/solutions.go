// Package solutions holds the solutions of lesson 02's exercises, out of the notebook's sight.
// Tests check that each passes its exercise.
package solutions

import (
	_ "embed"
)

// Exercise1 is a packed half multiply (kernel mul_mine).
//
//go:embed ex1_mul_half8.cu
var Exercise1 string

// Exercise2 is the half2 upsample backward (kernel up2x_bwd_mine).
//
//go:embed ex2_up2x_bwd_half2.cu
var Exercise2 string
