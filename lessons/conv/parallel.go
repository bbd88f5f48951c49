package conv

import (
	"runtime"
	"sync"
)

// parallel runs f(0..n-1) on every CPU: the float64 references of a few thousand outputs of a deep
// layer are millions of multiply-adds.
func parallel(n int, f func(i int)) {
	workers := min(runtime.NumCPU(), max(1, n/64))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += workers {
				f(i)
			}
		}(w)
	}
	wg.Wait()
}
