package gpu

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestCheckConfigNamesTheLimit(t *testing.T) {
	k := KernelAttrs{Registers: 32, MaxThreadsPerBlock: 1024}
	cases := []struct {
		cfg  Config
		want string // empty: accepted
	}{
		{Config{Grid: D1(10), Block: D1(256)}, ""},
		{Config{Grid: D1(10), Block: D1(2048)}, "limits per dimension"},
		{Config{Grid: D1(10), Block: D2(64, 32)}, "over the device's limit of 1024"},
		{Config{Grid: D1(0), Block: D1(256)}, "at least 1"},
		{Config{Grid: D2(1, 70000), Block: D1(256)}, "65535"},
		{Config{Grid: D1(1), Block: D1(256), SharedBytes: 100 << 10}, ""},
		{Config{Grid: D1(1), Block: D1(256), SharedBytes: 300 << 10}, "over the device's limit of 232448 bytes"},
	}
	for _, c := range cases {
		err := CheckConfig(h100, k, c.cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v refused: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: error %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
	heavy := KernelAttrs{Registers: 255, MaxThreadsPerBlock: 256}
	if err := CheckConfig(h100, heavy, Config{Grid: D1(1), Block: D1(512)}); err == nil || !strings.Contains(err.Error(), "255 registers") {
		t.Errorf("a block over the kernel's register-bound limit: %v", err)
	}
}

func TestEstimateOccupancy(t *testing.T) {
	cases := []struct {
		k       KernelAttrs
		block   int
		smem    int
		blocks  int
		limiter string
	}{
		{KernelAttrs{Registers: 32}, 256, 0, 8, "threads"},
		{KernelAttrs{Registers: 128}, 256, 0, 2, "registers"},
		{KernelAttrs{Registers: 32}, 256, 100 << 10, 2, "shared memory"},
		{KernelAttrs{Registers: 16}, 32, 0, 32, "blocks"},
	}
	for _, c := range cases {
		o := EstimateOccupancy(h100, c.k, c.block, c.smem)
		if o.BlocksPerSM != c.blocks || o.Limiter != c.limiter {
			t.Errorf("%d regs, block %d, smem %d: %d blocks limited by %s; want %d by %s", c.k.Registers, c.block, c.smem, o.BlocksPerSM, o.Limiter, c.blocks, c.limiter)
		}
	}
	if o := EstimateOccupancy(h100, KernelAttrs{Registers: 32}, 256, 0); o.Fraction != 1 {
		t.Errorf("full occupancy = %v", o.Fraction)
	}
}

func TestPackArgs(t *testing.T) {
	m := &TensorMap{}
	for i := range m.words {
		m.words[i] = uint64(100 + i)
	}
	p, err := packArgs([]any{int32(-1), float32(1.5), m, int64(1 << 40), float64(2)})
	if err != nil {
		t.Fatal(err)
	}
	if p.word(0) != 0xffffffff || p.word(1) != uint64(math.Float32bits(1.5)) || p.word(3) != 1<<40 || p.word(4) != math.Float64bits(2) {
		t.Errorf("params %x at %v", p.data, p.offsets)
	}
	if p.offsets[2] != 64 || p.offsets[3] != 64+128 || p.word(2) != 100 || binary.LittleEndian.Uint64(p.data[64+120:]) != 115 {
		t.Errorf("the tensor map is not 128 bytes at offset 64: offsets %v", p.offsets)
	}
	if _, err := packArgs([]any{7}); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("a Go int was accepted: %v", err)
	}
	if _, err := packArgs([]any{"x"}); err == nil {
		t.Error("a string was accepted")
	}
}

func TestDeviceFacts(t *testing.T) {
	d := DeviceInfo{Major: 9, Minor: 0, SMs: 132, ClockMHz: 1980, MemClockMHz: 2619, MemBusWidthBits: 5120, DriverVersion: 13000}
	if got := d.PeakFP32GFLOPS(); math.Abs(got-66908.16) > 0.01 {
		t.Errorf("H100 FP32 peak %v GFLOP/s", got)
	}
	if got := d.TheoreticalBandwidthGBs(); math.Abs(got-3352.32) > 0.01 {
		t.Errorf("H100 bandwidth %v GB/s", got)
	}
	if d.Arch() != "compute_90" || d.Driver() != "13.0" {
		t.Errorf("arch %s driver %s", d.Arch(), d.Driver())
	}
}
