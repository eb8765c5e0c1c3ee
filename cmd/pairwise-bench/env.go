package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pairwise-canary/pairwise/internal/procs"
)

// env holds what every measurement needs: the project root, the pinned
// Prometheus, the generator binary and a directory for generated data.
type env struct {
	root     string
	genBin   string
	genID    []byte // the generator binary's SHA-256: part of each data set's cache key
	dataRoot string // generated data sets, one directory per generator and argument set
	tmp      string // scratch (Prometheus configs and logs), removed at the end
	logf     func(format string, args ...any)
}

func newEnv(cacheDir string, logf func(string, ...any)) (*env, error) {
	root, err := procs.Root()
	if err != nil {
		return nil, err
	}
	// Prometheus is started by procs; asking for it now fails early.
	if _, err := procs.Binary("prometheus"); err != nil {
		return nil, err
	}
	e := &env{root: root, logf: logf}
	e.tmp, err = os.MkdirTemp("", "pairwise-bench-")
	if err != nil {
		return nil, err
	}
	if cacheDir == "" {
		cacheDir = filepath.Join(e.tmp, "data")
	}
	e.dataRoot = cacheDir
	if err := os.MkdirAll(e.dataRoot, 0o755); err != nil {
		return nil, err
	}
	// Build pairwise-gen from tools/ (its own module) with the go command.
	e.genBin = filepath.Join(e.tmp, "pairwise-gen")
	if err := procs.BuildGenerator(e.genBin); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(e.genBin)
	if err != nil {
		return nil, err
	}
	id := sha256.Sum256(bin)
	e.genID = id[:]
	return e, nil
}

func (e *env) close() { os.RemoveAll(e.tmp) }

// stderrLog logs a line on stderr, stamped with the seconds since started.
func stderrLog(started time.Time) func(format string, args ...any) {
	return func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, a...))
	}
}

// dataset is one generated TSDB with its ground truth.
type dataset struct {
	Args       []string `json:"args"`
	Dir        string   `json:"-"`
	Truth      string   `json:"-"`
	GenSeconds float64  `json:"gen_seconds"`
	Summary    string   `json:"summary"`
	Cached     bool     `json:"-"`
}

// generate runs pairwise-gen with args (--out, --truth and --quiet are added),
// reusing an earlier result of the same generator binary with the same
// arguments from the cache directory: a generator whose data or truth file
// changed generates again.
// Prometheus only ever opens a copy-free *clone* of the blocks (see serve), so
// a cached directory is never modified.
func (e *env) generate(args ...string) (*dataset, error) {
	h := sha256.Sum256(append(slices.Clone(e.genID), strings.Join(args, "\x00")...))
	dir := filepath.Join(e.dataRoot, hex.EncodeToString(h[:8]))
	ds := &dataset{Args: args}
	meta := filepath.Join(dir, "meta.json")
	if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, ds) == nil {
		g := procs.GeneratedIn(dir)
		ds.Dir, ds.Truth, ds.Cached = g.DataDir, g.TruthFile, true
		e.logf("data: reusing %s (generated in %.1fs): %s", dir, ds.GenSeconds, strings.Join(args, " "))
		return ds, nil
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.logf("data: generating %s", strings.Join(args, " "))
	t0 := time.Now()
	g, err := procs.Generate(e.genBin, dir, args...)
	if err != nil {
		return nil, err
	}
	ds.Dir, ds.Truth = g.DataDir, g.TruthFile
	ds.GenSeconds = time.Since(t0).Seconds()
	ds.Summary = g.Summary
	e.logf("data: %.1fs: %s", ds.GenSeconds, ds.Summary)
	b, _ := json.Marshal(ds)
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		return nil, err
	}
	return ds, nil
}

// serve starts Prometheus on a private copy of the data set's blocks (hard
// links, so it is cheap) with compaction disabled: min and max block
// durations of 2h keep the generated 2h blocks as they are, so no
// compaction runs while timings are taken. The caller stops it.
func (e *env) serve(ds *dataset) (*procs.Prometheus, error) {
	dir, err := os.MkdirTemp(e.tmp, "prom-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := linkTree(ds.Dir, data); err != nil {
		return nil, err
	}
	return procs.StartPrometheus(dir, procs.PromOptions{
		DataDir: data,
		Args: []string{
			"--storage.tsdb.min-block-duration=2h",
			"--storage.tsdb.max-block-duration=2h",
			"--query.max-samples=500000000",
		},
		ReadyTimeout: 120 * time.Second,
	})
}

// linkTree recreates src under dst with hard links for files (copies when
// linking fails), so Prometheus can write its WAL and lock without touching
// the cached data set.
func linkTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		// Prometheus rewrites these; never share them.
		if base := filepath.Base(p); base == "lock" || strings.HasPrefix(rel, "wal") || strings.HasPrefix(rel, "chunks_head") || base == "queries.active" {
			return nil
		}
		if err := os.Link(p, target); err == nil {
			return nil
		} else if !errors.Is(err, os.ErrExist) {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, fi.Mode())
		}
		return nil
	})
}
