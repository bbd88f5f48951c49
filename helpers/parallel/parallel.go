// Package parallel runs independent iterations on every core: the float64 CPU references of the
// lessons, whose outputs do not depend on one another.
package parallel

import (
	"runtime"
	"sync"
)

// For runs f(i) for every i in [0, n) on GOMAXPROCS goroutines, and returns when all have run.
// f must be safe to call concurrently for different i.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	next := make(chan int, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
