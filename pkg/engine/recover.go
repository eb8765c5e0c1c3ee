package engine

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// ErrInternal is a panic inside the engine, caught where it happened and
// returned as an error: a goroutine's panic would otherwise end the whole
// process (the Grafana plugin, the judge with Go's exit status 2, which the
// judge's callers read as rollback).
type ErrInternal struct {
	What  string // what was running
	Value any    // what was panicked with
	Stack []byte // the panicking goroutine's stack
}

func (e *ErrInternal) Error() string {
	return fmt.Sprintf("internal error while %s: %v (please report it with the request that caused it)", e.What, e.Value)
}

// recovered turns a panic of the calling goroutine into *err; use it as
// `defer recovered(&err, "reading the baseline")`.
func recovered(err *error, what string) {
	if r := recover(); r != nil {
		*err = &ErrInternal{What: what, Value: r, Stack: debug.Stack()}
	}
}

// firstPanic keeps the first panic of several goroutines, to be raised
// again on the goroutine that waits for them (repanic), where the caller's
// own recovery can see it.
type firstPanic struct {
	once sync.Once
	err  error
}

// catch is deferred by each goroutine.
func (p *firstPanic) catch(what string) {
	if r := recover(); r != nil {
		p.once.Do(func() { p.err = &ErrInternal{What: what, Value: r, Stack: debug.Stack()} })
	}
}

// repanic raises the first caught panic, as an *ErrInternal, on the calling
// goroutine.
func (p *firstPanic) repanic() {
	if p.err != nil {
		panic(p.err)
	}
}
