package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestPanicIsAnError: a command that panics ends with the error status, not
// Go's 2, which a pipeline reads as rollback.
func TestPanicIsAnError(t *testing.T) {
	extraCommands["test-panic"] = func([]string, io.Writer, io.Writer) int { panic("boom") }
	defer delete(extraCommands, "test-panic")
	var stderr bytes.Buffer
	if code := run([]string{"test-panic"}, io.Discard, &stderr); code != exitError || !strings.Contains(stderr.String(), "internal error") || !strings.Contains(stderr.String(), "boom") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
