// Package stop turns Ctrl-C and SIGTERM into a cancelled context for the
// tools' long runs, so that their deferred cleanups (temporary heads in
// $TMPDIR) run before they exit, and gives the exit status a shell reports
// for a process the signal ended.
package stop

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Signal is the cause of a context OnSignal cancelled.
type Signal struct{ Sig syscall.Signal }

func (s Signal) Error() string {
	if s.Sig == syscall.SIGINT {
		return "stopped by SIGINT (Ctrl-C)"
	}
	return "stopped by " + signalName(s.Sig)
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return s.String()
}

// OnSignal returns a context that the first SIGINT or SIGTERM cancels, with
// a Signal as its cause (context.Cause); a second one ends the process at
// once, as without a handler.
func OnSignal() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Stop(sigs)
		cancel(Signal{s.(syscall.Signal)})
	}()
	return ctx
}

// ExitCode is 128 plus the signal's number when err comes from a signal
// (130 for Ctrl-C, 143 for SIGTERM), else 1.
func ExitCode(err error) int {
	if s := (Signal{}); errors.As(err, &s) {
		return 128 + int(s.Sig)
	}
	return 1
}
