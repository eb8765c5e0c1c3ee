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
	if code := run([]string{"test-panic"}, io.Discard, &stderr); code != exitError || !strings.Contains(stderr.String(), "internal error") || !strings.Contains(stderr.String(), "boom") || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want one line", code, stderr.String())
	}
	// The stack, when asked for.
	t.Setenv("PAIRWISE_DEBUG", "1")
	stderr.Reset()
	if code := run([]string{"test-panic"}, io.Discard, &stderr); code != exitError || !strings.Contains(stderr.String(), "goroutine") {
		t.Fatalf("exit %d, stderr %q; want the stack", code, stderr.String())
	}
}

// TestJudgeCommandLine: what a pipeline sees when the judge's command line
// is wrong: exit 3 and one line on stderr naming the cause, nothing on
// stdout; help is no decision either (0 would read as promote); an
// unparsable URL with an @ after its host is refused, not a crash.
func TestJudgeCommandLine(t *testing.T) {
	fleet := []string{"--metric", "m", "--baseline", `{a="b"}`, "--canary", `{a="c"}`}
	for _, tc := range []struct {
		args []string
		want string // in the one line; "" for help
	}{
		{append([]string{"--bogus"}, fleet...), "pairwise: flag provided but not defined: -bogus"},
		{append([]string{"--window", "5x"}, fleet...), `pairwise: invalid value "5x" for flag -window`},
		{append([]string{"--warmup", "1.5"}, fleet...), `pairwise: invalid value "1.5" for flag -warmup`},
		{append([]string{"--prometheus", "http://prom:90 90/x@y"}, fleet...), "pairwise: "},
		{append([]string{"--prometheus", "http://[::1/a@b"}, fleet...), "pairwise: "},
		{[]string{"-h"}, ""},
		{append([]string{"--output", "json", "-help"}, fleet...), ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runJudge(tc.args...)
			if code != exitError || stdout != "" {
				t.Fatalf("exit %d, stdout %q", code, stdout)
			}
			if tc.want == "" {
				if !strings.Contains(stderr, "-window") {
					t.Fatalf("help: %q", stderr)
				}
				return
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, tc.want) || strings.Contains(stderr, "internal error") {
				t.Fatalf("stderr %q, want one line starting %q", stderr, tc.want)
			}
		})
	}
}
