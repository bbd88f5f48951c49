package compile

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Resources are what ptxas reports for one kernel compiled for a real architecture.
type Resources struct {
	Kernel      string
	Registers   int
	SharedBytes int // static shared memory
	StackBytes  int
	SpillStores int
	SharedOver  bool // ptxas refused the kernel's static shared memory
	SharedMax   int  // the static limit ptxas applied (48 KiB), when it refused
}

var (
	ptxasEntry  = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	ptxasUsed   = regexp.MustCompile(`Used (\d+) registers`)
	ptxasSmem   = regexp.MustCompile(`(\d+) bytes smem`) // on the Used line: CUDA 12 and 13 put ", used N barriers" between
	ptxasFrame  = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores`)
	ptxasShared = regexp.MustCompile(`Entry function '([^']+)' uses too much shared data \((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)`)
)

// Usage parses ptxas's verbose log (a compile with --ptxas-options=-v for an sm_XX architecture,
// as Inspect does) into one Resources per kernel, in the order ptxas wrote them, including the
// kernels ptxas refused.
func Usage(log string) []Resources {
	var out []Resources
	find := func(name string) *Resources {
		for i := range out {
			if out[i].Kernel == name {
				return &out[i]
			}
		}
		out = append(out, Resources{Kernel: name})
		return &out[len(out)-1]
	}
	var cur *Resources
	for _, line := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			cur = find(m[1])
			continue
		}
		if m := ptxasShared.FindStringSubmatch(line); m != nil {
			r := find(m[1])
			b, _ := strconv.ParseInt(m[2], 0, 64)
			mx, _ := strconv.ParseInt(m[3], 0, 64)
			r.SharedBytes, r.SharedMax, r.SharedOver = int(b), int(mx), true
			continue
		}
		if cur == nil {
			continue
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil {
			cur.Registers, _ = strconv.Atoi(m[1])
			if m := ptxasSmem.FindStringSubmatch(line); m != nil {
				cur.SharedBytes, _ = strconv.Atoi(m[1])
			}
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil {
			cur.StackBytes, _ = strconv.Atoi(m[1])
			cur.SpillStores, _ = strconv.Atoi(m[2])
		}
	}
	return out
}

// Inspect compiles src for the real architecture of opts.Arch with ptxas's report on (Assemble
// with --ptxas-options=-v) and returns each kernel's resources. With no GPU it tells what the
// driver's JIT would refuse on the reader's GPU (static shared memory over 48 KiB) and what the
// kernel uses. err is Assemble's: a *Error with the log when ptxas refuses the kernel; the
// resources parsed from that log come back with it.
func Inspect(src Source, opts Options) ([]Resources, error) {
	opts.Extra = append(append([]string(nil), opts.Extra...), "--ptxas-options=-v")
	log, err := Assemble(src, opts)
	if ce, ok := err.(*Error); ok {
		log = ce.Log
	} else if err != nil {
		return nil, err
	}
	return Usage(log), err
}

// KiB writes a byte count with its KiB: "400000 bytes (390.6 KiB)".
func KiB(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d bytes (%d KiB)", n, n/1024)
	}
	return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/1024)
}
