package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pairwise-canary/pairwise/pkg/rulegen"
)

func init() { extraCommands["rules"] = rules }

// rules renders the Prometheus rule pack from its config file:
//
//	pairwise rules --config rules/pairwise.yaml [--out rules/pairwise.rules.yml]
func rules(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "rule pack config file, e.g. rules/pairwise.yaml (required)")
	out := fs.String("out", "", "write the rule file here instead of standard output")
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return code
	}
	if *config == "" {
		return fail(stderr, errors.New("--config is required, e.g. --config rules/pairwise.yaml"))
	}
	data, err := os.ReadFile(*config)
	if err != nil {
		return fail(stderr, fmt.Errorf("read rule pack config: %w", err))
	}
	file, err := rulegen.Load(data)
	if err != nil {
		return fail(stderr, fmt.Errorf("%s: %w", *config, err))
	}
	file.Source = filepath.ToSlash(*config)
	pack, err := rulegen.Render(file)
	if err != nil {
		return fail(stderr, fmt.Errorf("%s: %w", *config, err))
	}
	if *out == "" {
		if _, err := stdout.Write(pack); err != nil {
			return fail(stderr, err)
		}
		return 0
	}
	// Write beside the target and rename, so Prometheus never loads half a file.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".pairwise-rules-*")
	if err != nil {
		return fail(stderr, fmt.Errorf("write rule pack: %w", err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(pack); err != nil {
		tmp.Close()
		return fail(stderr, fmt.Errorf("write rule pack: %w", err))
	}
	if err := tmp.Close(); err != nil {
		return fail(stderr, fmt.Errorf("write rule pack: %w", err))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fail(stderr, fmt.Errorf("write rule pack: %w", err))
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return fail(stderr, fmt.Errorf("write rule pack: %w", err))
	}
	generic := ""
	switch n := len(file.Generic); n {
	case 0:
	case 1:
		generic = ", 1 generic group"
	default:
		generic = fmt.Sprintf(", %d generic groups", n)
	}
	fmt.Fprintf(stderr, "pairwise: wrote %s (%d canaries%s)\n", *out, len(file.Canaries), generic)
	return 0
}
