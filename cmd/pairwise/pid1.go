package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// underInit marks the process that asPID1 starts, so it does not start
// another.
const underInit = "PAIRWISE_UNDER_INIT"

// asPID1 runs pairwise as a child and returns the status to exit with, when
// this process is PID 1 (a container without an init: the image's
// entrypoint, an Argo Job's pod). Linux does not deliver to PID 1 a signal
// it has no handler for, its own SIGABRT included, so a crash there could
// not abort: Go then exits with status 2, the judge's rollback. The child
// is not PID 1 and aborts; this process forwards every signal it is sent to
// the child, exits with the child's status, and with 128 + the signal when
// the child was killed by one (134 for an abort), as a shell reports it.
// ok is false when this process is not PID 1 or is asPID1's child.
func asPID1(args []string, stderr io.Writer) (code int, ok bool) {
	if os.Getpid() != 1 || os.Getenv(underInit) != "" {
		return 0, false
	}
	return superviseChild("/proc/self/exe", args, stderr), true
}

// superviseChild runs exe with args as asPID1 describes.
func superviseChild(exe string, args []string, stderr io.Writer) int {
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), underInit+"=1")
	signals := make(chan os.Signal, 8)
	signal.Notify(signals)
	defer signal.Stop(signals)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "pairwise: starting pairwise under PID 1: %v\n", err)
		return exitError
	}
	go func() {
		for s := range signals {
			if s != syscall.SIGCHLD && s != syscall.SIGURG { // the child's own end; Go's preemption
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "pairwise: waiting for pairwise under PID 1: %v\n", err)
		return exitError
	}
}
