//go:build nocuda

package gpu

import (
	"fmt"
	"unsafe"
)

// In the nocuda build there is no driver: Open fails with ErrNoGPU, so no Session exists and none
// of these methods is reached. They exist so the package has one API in both builds.
type driver struct{}

type (
	module   struct{}
	function struct{}
	event    struct{}
)

var errNoDriver = fmt.Errorf("%w: this program was built with the nocuda tag (no-GPU mode)", ErrNoGPU)

func openDriver(int) (*driver, DeviceInfo, error) { return nil, DeviceInfo{}, errNoDriver }

func (*driver) close() error                                 { return nil }
func (*driver) synchronize() error                           { return errNoDriver }
func (*driver) memInfo() (int64, int64, error)               { return 0, 0, errNoDriver }
func (*driver) alloc(int64) (uintptr, error)                 { return 0, errNoDriver }
func (*driver) free(uintptr) error                           { return errNoDriver }
func (*driver) htod(uintptr, unsafe.Pointer, int64) error    { return errNoDriver }
func (*driver) dtoh(unsafe.Pointer, uintptr, int64) error    { return errNoDriver }
func (*driver) dtod(uintptr, uintptr, int64) error           { return errNoDriver }
func (*driver) memset8(uintptr, byte, int64) error           { return errNoDriver }
func (*driver) memset16(uintptr, uint16, int64) error        { return errNoDriver }
func (*driver) memset32(uintptr, uint32, int64) error        { return errNoDriver }
func (*driver) load(string) (module, error)                  { return module{}, errNoDriver }
func (*driver) function(module, string) (function, error)    { return function{}, errNoDriver }
func (*driver) attrs(function) (KernelAttrs, error)          { return KernelAttrs{}, errNoDriver }
func (*driver) occupancy(function, int, int) (int, error)    { return 0, errNoDriver }
func (*driver) setMaxDynamicShared(function, int) error      { return errNoDriver }
func (*driver) launch(function, Config, params) error        { return errNoDriver }
func (*driver) encodeTiled(*[16]uint64, TensorMapSpec) error { return errNoDriver }
func (*driver) allowLargeClusters(function) error            { return errNoDriver }
func (*driver) maxActiveClusters(function, int, int, int) (int, error) {
	return 0, errNoDriver
}
func (*driver) newEvent() (event, error)              { return event{}, errNoDriver }
func (*driver) record(event) error                    { return errNoDriver }
func (*driver) destroyEvent(event) error              { return errNoDriver }
func (*driver) elapsed(event, event) (float64, error) { return 0, errNoDriver }

// HeaderVersion is empty in the nocuda build, which does not include cuda.h.
func HeaderVersion() string { return "" }
