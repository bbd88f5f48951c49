package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/cudalessons/cudalessons/helpers/gpu"
)

// CopyBytes is the size of the buffer the copy bandwidth is measured with: 256 MiB each way, far
// beyond any L2.
const CopyBytes = 256 << 20

// CopyBandwidth is the device-to-device copy bandwidth in GB/s, counting the bytes read and the
// bytes written (2 x 256 MiB per copy). It is the practical ceiling of a memory-bound kernel that
// reads and writes in about a copy's mix (one that mostly reads can pass it), and the suite's
// "% of peak bandwidth" is against it. It is measured once per GPU and driver and cached on
// disk, since each notebook cell is a new process; refresh measures again.
func (b *Bench) CopyBandwidth(refresh bool) (float64, error) {
	path, perr := copyCachePath(b.S.Device)
	if perr == nil && !refresh {
		if v, err := readCopyCache(path); err == nil {
			return v, nil
		}
	}
	v, err := b.measureCopy()
	if err != nil {
		return 0, err
	}
	if perr == nil {
		if data, err := json.Marshal(map[string]any{"device": b.S.Device.Name, "gbps": v, "method": b.Method.String()}); err == nil {
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, data, 0o644)
		}
	}
	return v, nil
}

func (b *Bench) measureCopy() (float64, error) {
	src, err := gpu.Alloc[uint32](b.S, CopyBytes/4)
	if err != nil {
		return 0, fmt.Errorf("measuring the copy bandwidth: %w", err)
	}
	defer src.Free()
	dst, err := gpu.Alloc[uint32](b.S, CopyBytes/4)
	if err != nil {
		return 0, fmt.Errorf("measuring the copy bandwidth: %w", err)
	}
	defer dst.Free()
	if err := src.Zero(); err != nil {
		return 0, err
	}
	t, err := b.Time(func() error { return dst.CopyFrom(src) })
	if err != nil {
		return 0, fmt.Errorf("measuring the copy bandwidth: %w", err)
	}
	return RatesOf(Work{Bytes: 2 * CopyBytes}, t.Median, 0, 0).GBps, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func copyCachePath(d gpu.DeviceInfo) (string, error) {
	dir := os.Getenv("KERNELS_CACHE_DIR")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(c, "cudalessons")
	}
	name := unsafeName.ReplaceAllString(fmt.Sprintf("copy-bw-%s-%d-%d", d.Name, d.Ordinal, d.DriverVersion), "_")
	return filepath.Join(dir, name+".json"), nil
}

func readCopyCache(path string) (float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var v struct{ GBps float64 }
	if err := json.Unmarshal(data, &v); err != nil || v.GBps <= 0 {
		return 0, fmt.Errorf("bad copy bandwidth cache %s", path)
	}
	return v.GBps, nil
}
