package classroom

import (
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Device is a GPU a student can be given: a whole GPU, or a MIG instance of one.
type Device struct {
	GPU  int    // nvidia-smi's index of the GPU (of the parent GPU, for a MIG instance)
	MIG  string // the MIG profile ("3g.40gb"); "" for a whole GPU
	Name string // "NVIDIA H100 80GB HBM3"
	UUID string // GPU-... or MIG-...: what CUDA_VISIBLE_DEVICES is set to (indexes follow CUDA's order, not nvidia-smi's)
}

// String names the device as nvidia-smi does.
func (d Device) String() string {
	if d.MIG != "" {
		return fmt.Sprintf("MIG %s instance of GPU %d, %s (%s)", d.MIG, d.GPU, d.Name, d.UUID)
	}
	return fmt.Sprintf("GPU %d, %s (%s)", d.GPU, d.Name, d.UUID)
}

var (
	gpuLine = regexp.MustCompile(`^GPU (\d+): (.+) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$`)
	migLine = regexp.MustCompile(`^\s+MIG (\S+)\s+Device\s+\d+: \(UUID: (MIG-[0-9a-zA-Z/-]+)\)\s*$`)
)

// ParseDevices reads `nvidia-smi -L`: every whole GPU, except that a GPU split into MIG instances
// is replaced by its instances (CUDA cannot use a MIG-enabled GPU whole).
func ParseDevices(out string) ([]Device, error) {
	var devs []Device
	var gpu *Device // the last GPU line
	split := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := gpuLine.FindStringSubmatch(line); m != nil {
			i, _ := strconv.Atoi(m[1])
			devs = append(devs, Device{GPU: i, Name: m[2], UUID: m[3]})
			gpu = &Device{GPU: i, Name: m[2]}
			continue
		}
		if m := migLine.FindStringSubmatch(line); m != nil && gpu != nil {
			split[gpu.GPU] = true
			devs = append(devs, Device{GPU: gpu.GPU, MIG: m[1], Name: gpu.Name, UUID: m[2]})
			continue
		}
		return nil, fmt.Errorf("nvidia-smi -L: cannot read the line %q", line)
	}
	whole := devs[:0]
	for _, d := range devs {
		if d.MIG == "" && split[d.GPU] {
			continue
		}
		whole = append(whole, d)
	}
	return whole, nil
}

// Devices lists this machine's GPUs through nvidia-smi -L: none (and no error) where there is no
// nvidia-smi or no GPU answers it.
func Devices() ([]Device, error) {
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		return nil, nil
	}
	out, err := exec.Command("nvidia-smi", "-L").Output()
	if err != nil {
		return nil, nil // nvidia-smi without a working GPU: the no-GPU mode
	}
	return ParseDevices(string(out))
}

// Seat is a student's place in the class: the device their server is given, and who shares it.
type Seat struct {
	Student string
	Device  *Device  // nil on a machine without a GPU
	Sharing []string // the other students on the same device
	Devices int      // how many devices the class is spread over
}

// Note is what the student's doctor cell shows of the seat.
func (s Seat) Note() string {
	if s.Device == nil {
		return s.Student + ": this machine has no GPU, so every student works in the no-GPU mode (kernels compile and are checked from their PTX; the recorded results stand in for measurements)"
	}
	where := fmt.Sprintf("%s: %s", s.Student, s.Device)
	switch {
	case len(s.Sharing) == 0:
		where += ", yours alone"
	case s.Devices == 1:
		where += fmt.Sprintf(", the machine's only GPU, shared with %d other students (%s): timings vary with their work", len(s.Sharing), list(s.Sharing))
	default:
		where += fmt.Sprintf(", shared with %s: timings vary with their work", list(s.Sharing))
	}
	return where
}

// list writes names as "a", "a and b" or "a, b and 3 more".
func list(names []string) string {
	switch n := len(names); {
	case n == 1:
		return names[0]
	case n <= 3:
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	default:
		return fmt.Sprintf("%s and %d more", strings.Join(names[:2], ", "), n-2)
	}
}

// Env is the environment the hub's spawner gives the student's server: CUDA_VISIBLE_DEVICES (the
// device's UUID, so that CUDA's device order cannot differ from nvidia-smi's) and KERNELS_SEAT (the
// note the doctor shows).
func (s Seat) Env() map[string]string {
	env := map[string]string{SeatEnv: s.Note()}
	if s.Device != nil {
		env["CUDA_VISIBLE_DEVICES"] = s.Device.UUID
	}
	return env
}

// SeatEnv is the variable that carries a student's seat to the doctor.
const SeatEnv = "KERNELS_SEAT"

// Assign gives every student of the roster a seat: the device the roster names, else the device
// with the fewest students so far (round robin when the roster names none). A device the machine
// does not have, or a GPU split into MIG instances given by index, is refused, naming the line.
func Assign(r *Roster, devs []Device) ([]Seat, error) {
	seats := make([]Seat, len(r.Students))
	load := make([]int, len(devs))
	var errs []error
	for i, st := range r.Students {
		seats[i] = Seat{Student: st.Name, Devices: len(devs)}
		if st.Device == "" {
			continue
		}
		k, err := find(devs, st.Device)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %s: %w", r.Path, st.Line, st.Name, err))
			continue
		}
		seats[i].Device = &devs[k]
		load[k]++
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, st := range r.Students {
		if st.Device != "" || len(devs) == 0 {
			continue
		}
		k := 0
		for j := range devs {
			if load[j] < load[k] {
				k = j
			}
		}
		seats[i].Device = &devs[k]
		load[k]++
	}
	for i := range seats {
		for j := range seats {
			if i != j && seats[i].Device != nil && seats[i].Device == seats[j].Device {
				seats[i].Sharing = append(seats[i].Sharing, seats[j].Student)
			}
		}
	}
	return seats, nil
}

// find is the device a roster names: an nvidia-smi index or a UUID.
func find(devs []Device, name string) (int, error) {
	if len(devs) == 0 {
		return 0, fmt.Errorf("the roster gives GPU %s, but this machine has no GPU (nvidia-smi -L lists none)", name)
	}
	if i, ok := index(name); ok {
		for k, d := range devs {
			if d.GPU == i && d.MIG == "" {
				return k, nil
			}
		}
		for _, d := range devs {
			if d.GPU == i {
				return 0, fmt.Errorf("GPU %d is split into MIG instances: give the UUID of one (nvidia-smi -L lists them, MIG-...)", i)
			}
		}
		return 0, fmt.Errorf("the roster gives GPU %d, but nvidia-smi lists GPUs 0 to %d", i, devs[len(devs)-1].GPU)
	}
	for k, d := range devs {
		if strings.EqualFold(d.UUID, name) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("no GPU or MIG instance of this machine has the UUID %s (nvidia-smi -L lists them)", name)
}
