// Command pairwise is Pairwise's command line: judge a canary window against
// Prometheus (exit 0 promote, 1 hold, 2 rollback, 3 error), render the rule
// pack, and simulate fleets.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

const usage = `pairwise: paired-fleet canary analysis on Prometheus histograms

Usage:
  pairwise judge    --prometheus URL --metric NAME --baseline SELECTOR --canary SELECTOR [flags]
  pairwise rules    --config rules/pairwise.yaml [--out FILE]
  pairwise simulate [--listen 127.0.0.1:9464] [--scenario NAME] [--backfill DIR --minutes N] [flags]
  pairwise serve    --prometheus URL [--config rules/pairwise.yaml] [--listen :8080]   decisions over HTTP for Argo Rollouts and Flagger
  pairwise webhook  --listen ADDR [--bearer-token-file FILE]   print one JSON line per alert Alertmanager sends

Run "pairwise COMMAND -h" for the flags of a command.
Exit status of judge: 0 promote, 1 hold, 2 rollback, 3 error; a crash
aborts (SIGABRT, 134), never 2.
`

// exitError is the status for anything that is not a decision.
const exitError = 3

func main() {
	// Go ends a crash it cannot recover (a fatal runtime error, SIGQUIT,
	// a panic on a goroutine without a recover) with exit status 2, which
	// is rollback. Aborting instead (SIGABRT, status 134 in a shell or a
	// container) keeps every crash apart from every decision. The image
	// also sets GOTRACEBACK=crash, for a runtime that fails before main.
	// As PID 1 a process cannot abort, so there pairwise runs as its own
	// child (asPID1).
	debug.SetTraceback("crash")
	if code, ok := asPID1(os.Args[1:], os.Stderr); ok {
		os.Exit(code)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	// A panic is an error, never Go's exit status 2, which means rollback.
	defer func() {
		if r := recover(); r != nil {
			// One line, as every error: the stack only when asked for.
			fmt.Fprintf(stderr, "pairwise: internal error (please report it with the command that caused it; PAIRWISE_DEBUG=1 prints where): %s\n", oneLine(fmt.Sprint(r)))
			if os.Getenv("PAIRWISE_DEBUG") != "" {
				stderr.Write(debug.Stack())
			}
			code = exitError
		}
	}()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	switch args[0] {
	case "judge":
		return judge(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		if cmd, ok := extraCommands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr)
		}
		fmt.Fprintf(stderr, "pairwise: unknown command %q\n\n%s", args[0], usage)
		return exitError
	}
}

// parseArgs parses a command's flags. When it returns false the command ends
// with the status it gives: 0 after -h, exitError for a bad flag or an
// argument the command does not take (said on stderr).
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	if help, err := parseFlags(fs, args, stderr); help {
		return 0, false
	} else if err != nil {
		return fail(stderr, err), false
	}
	if fs.NArg() > 0 {
		return fail(stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0))), false
	}
	return 0, true
}

// parseFlags parses args into fs. A bad flag is its error, for the caller
// to say on one line (Go's flag package would print it and the whole usage
// after it); -h prints the usage on stderr and is help.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (help bool, err error) {
	usage := fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err = fs.Parse(args)
	fs.SetOutput(stderr)
	fs.Usage = usage
	if !errors.Is(err, flag.ErrHelp) {
		return false, err
	}
	if usage != nil {
		usage()
	} else {
		fmt.Fprintf(stderr, "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	return true, nil
}

// extraCommands holds the commands defined in their own files.
var extraCommands = map[string]func(args []string, stdout, stderr io.Writer) int{}
