package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/prom"
	"github.com/pairwise-canary/pairwise/pkg/selector"
)

// RecordedSource is what a Source offers when it can read the rule pack's
// recorded minute series (prom.MinuteHistogramRecord, MinuteHealthRecord);
// *prom.Client implements it. Each returns only the minutes the record
// holds.
type RecordedSource interface {
	RecordedHistograms(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Series, error)
	RecordedHealth(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (map[int64]prom.Health, error)
	// SampledSpan is the part of r whose minutes may hold a raw sample of
	// the series the minutes read (false when none can), so that minutes
	// the record lacks are only read raw where there is something to read.
	SampledSpan(ctx context.Context, metric string, sel selector.Selector, kind prom.Kind, r prom.Range) (prom.Range, bool, error)
}

// SharedSource is what a Source offers when it can count the series two
// selectors both select at each whole minute of a range, Unix seconds to
// count, the minutes with none absent (*prom.Client implements it):
// Analyze refuses fleets that share a series at the last minute and holds
// the windows of earlier minutes that shared one, which selector.Apart
// cannot see when the selectors name different labels
// ({track="baseline"} beside {pod=~"checkout-.+"}).
type SharedSource interface {
	SharedSeries(ctx context.Context, metric string, a, b selector.Selector, r prom.Range) (map[int64]int, error)
}

// The client offers the record, and counts shared series.
var (
	_ RecordedSource = (*prom.Client)(nil)
	_ SharedSource   = (*prom.Client)(nil)
	_ RequestSource  = (*prom.Client)(nil)
)

// ErrSharedSeries means some series are selected by both fleets' selectors.
var ErrSharedSeries = errors.New("the fleets share series")

// Reading says where Analyze reads the fleets.
type Reading string

// Readings. Auto reads the recorded minute series when the Source offers
// them and they exist for the fleet, and raw series otherwise; Raw never
// reads the record; Recorded fails when a fleet has no recorded series.
// Whatever the reading, minutes the record does not hold are read from
// raw series, so the result is the raw one.
const (
	ReadAuto     Reading = "auto"
	ReadRaw      Reading = "raw"
	ReadRecorded Reading = "recorded"
)

// ParseReading accepts auto, raw or recorded (empty means raw).
func ParseReading(s string) (Reading, error) {
	switch Reading(s) {
	case "", ReadRaw:
		return ReadRaw, nil
	case ReadAuto, ReadRecorded:
		return Reading(s), nil
	}
	return "", fmt.Errorf("source %q is not one of auto, raw, recorded", s)
}

// Served tells how one query of an analysis was answered.
type Served struct {
	// What is the query: "baseline histogram", "canary health", ...
	What string `json:"what"`
	// Path is "recorded" when the record answered (RawMinutes of the
	// minutes it does not hold were read raw; the others hold no raw
	// sample either), else "raw".
	Path            string `json:"path"`
	RecordedMinutes int    `json:"recordedMinutes"`
	RawMinutes      int    `json:"rawMinutes"`
}

// ErrNotRecorded means Recorded reading was asked for and a fleet has no
// recorded minute series (or more than one answers for it).
var ErrNotRecorded = errors.New("no recorded minute series for the fleet")

// maxRawRuns bounds the raw queries that fill the minutes a record lacks:
// beyond it one query spans them all.
const maxRawRuns = 3

// readFleet reads one fleet's histograms as req.Read says, falling back to
// raw series; served tells how, and warning is for the user.
//
// Each raw histogram read is accompanied by the fleet's raw health read of
// the same kind, when hp is not nil (see healthAhead).
func readFleet(ctx context.Context, src Source, read Reading, spec fetchSpec, kind prom.Kind, r prom.Range, hp *healthAhead) (prom.Series, prom.Kind, Served, string, error) {
	served := Served{What: spec.what, Path: "raw", RawMinutes: r.Minutes()}
	rs, ok := src.(RecordedSource)
	if read == ReadRaw || !ok {
		if read == ReadRecorded {
			return nil, kind, served, "", fmt.Errorf("%w: this data source cannot read recorded series", ErrNotRecorded)
		}
		hp.raw(kind)
		series, k, err := src.FleetHistograms(ctx, spec.metric, spec.sel, kind, r)
		return series, k, served, "", err
	}
	recKind := kind
	if recKind == prom.Auto {
		// A native record decides auto as the raw path would (it is made of
		// native samples).
		recKind = prom.Native
	}
	rec, warning, err := lookup(ctx, rs, read, spec, recKind, r)
	if err != nil {
		return nil, kind, served, "", err
	}
	rawKind := kind // what minutes without a record are read as
	if len(rec) == 0 && kind == prom.Auto && warning == "" {
		// No native record: the raw path reads the fleet's native series
		// when it has any (this is its first query), else its classic
		// series, for which a classic record stands.
		if read != ReadRecorded {
			hp.raw(prom.Native)
		}
		native, _, err := src.FleetHistograms(ctx, spec.metric, spec.sel, prom.Native, r)
		if err != nil {
			return nil, kind, served, "", err
		}
		if len(native) > 0 && read != ReadRecorded {
			return native, prom.Native, served, "", nil
		}
		if len(native) == 0 {
			recKind, rawKind = prom.Classic, prom.Classic
			if rec, warning, err = lookup(ctx, rs, read, spec, recKind, r); err != nil {
				return nil, kind, served, "", err
			}
		}
	}
	if len(rec) == 0 {
		if read == ReadRecorded {
			return nil, kind, served, "", fmt.Errorf("%w: %s of %s between %s and %s at a %d s scrape interval (a pack records its minutes at its own scrapeIntervalSeconds, label %s: read at the pack's)",
				ErrNotRecorded, prom.MinuteHistogramRecord(spec.metric, recKind), spec.sel, r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339),
				int(r.Scrape/time.Second), prom.RecordedScrapeLabel)
		}
		hp.raw(rawKind)
		series, k, err := src.FleetHistograms(ctx, spec.metric, spec.sel, rawKind, r)
		return series, k, served, warning, err
	}
	served.Path, served.RecordedMinutes = "recorded", len(rec)
	missing := missingRuns(r, func(t int64) bool { _, ok := rec[t]; return ok })
	served.RawMinutes = 0
	for _, run := range missing {
		run, has, err := sampledSpan(ctx, rs, spec.metric, spec.sel, recKind, run)
		if err != nil {
			return nil, kind, served, "", err
		}
		if !has {
			continue // nothing raw either: the minutes stay empty, as raw
		}
		raw, _, err := src.FleetHistograms(ctx, spec.metric, spec.sel, recKind, run)
		if err != nil {
			return nil, kind, served, "", err
		}
		fill(rec, raw, run)
		served.RawMinutes += run.Minutes()
	}
	return rec, recKind, served, "", nil
}

// lookup reads a fleet's recorded minute histograms of kind (native or
// classic). A record that cannot stand for the fleet (ambiguous, or of the
// wrong sample type), or a backend that rejects the look-up, is no record
// and a warning under ReadAuto, ErrNotRecorded under ReadRecorded; any
// other failure is returned.
func lookup(ctx context.Context, rs RecordedSource, read Reading, spec fetchSpec, kind prom.Kind, r prom.Range) (prom.Series, string, error) {
	rec, err := rs.RecordedHistograms(ctx, spec.metric, spec.sel, kind, r)
	switch {
	case errors.Is(err, prom.ErrRecordAmbiguous), errors.Is(err, prom.ErrNotFound):
		if read == ReadRecorded {
			return nil, "", fmt.Errorf("%w: %v", ErrNotRecorded, err)
		}
		return nil, "the " + spec.what + " is read from raw series: " + err.Error(), nil
	case read == ReadAuto && lookupUnsupported(err):
		// A backend that rejects the look-up (no instant query API, or no
		// range selector in one) is read raw, as before the record; if it
		// is the address that is wrong, the raw query says so.
		return nil, "the " + spec.what + " is read from raw series: the recorded minute series could not be looked up: " + err.Error(), nil
	case err != nil:
		// Unreachable, too slow, refusing the credentials, failing: the raw
		// queries go to the same server, so this is the error they would
		// give, and no answer is made without them.
		return nil, "", err
	}
	return rec, "", nil
}

// lookupUnsupported says whether a failed look-up of the record means the
// backend does not serve it (it rejected the query, or does not answer the
// instant query API like Prometheus), rather than that it is unwell.
func lookupUnsupported(err error) bool {
	return errors.Is(err, prom.ErrBadQuery) || errors.Is(err, prom.ErrNotProm)
}

// readHealth reads one fleet's health: from the record when the fleet's
// histograms were, the minutes it lacks from raw series.
// A raw read that hp has ahead (of the same kind) is taken from it.
func readHealth(ctx context.Context, src Source, histograms Served, metric string, sel selector.Selector, kind prom.Kind, r prom.Range, hp *healthAhead) (map[int64]prom.Health, Served, error) {
	served := Served{What: histograms.What, Path: "raw", RawMinutes: r.Minutes()}
	rs, ok := src.(RecordedSource)
	if histograms.Path != "recorded" || !ok {
		if h, ahead, err := hp.take(kind); ahead {
			return h, served, err
		}
		h, err := src.FleetHealth(ctx, metric, sel, kind, r)
		return h, served, err
	}
	rec, err := rs.RecordedHealth(ctx, metric, sel, kind, r)
	if errors.Is(err, prom.ErrRecordAmbiguous) {
		h, err := src.FleetHealth(ctx, metric, sel, kind, r)
		return h, served, err
	}
	if err != nil {
		return nil, served, err
	}
	served.Path, served.RecordedMinutes, served.RawMinutes = "recorded", len(rec), 0
	for _, run := range missingRuns(r, func(t int64) bool { _, ok := rec[t]; return ok }) {
		run, has, err := sampledSpan(ctx, rs, metric, sel, kind, run)
		if err != nil {
			return nil, served, err
		}
		if !has {
			continue
		}
		raw, err := src.FleetHealth(ctx, metric, sel, kind, run)
		if err != nil {
			return nil, served, err
		}
		fill(rec, raw, run)
		served.RawMinutes += run.Minutes()
	}
	return rec, served, nil
}

// sampledSpan narrows a run of minutes the record lacks to the minutes that
// can hold raw data: the span whose minutes may hold a raw sample
// (RecordedSource.SampledSpan), widened by a minute on each side (within
// the run), since a minute's increase() also reads the last samples of the
// minute before it. A short run is read as it is, which costs no more than
// asking; a longer one costs one question, however long it is and wherever
// its samples lie.
func sampledSpan(ctx context.Context, rs RecordedSource, metric string, sel selector.Selector, kind prom.Kind, run prom.Range) (prom.Range, bool, error) {
	if run.Minutes() <= shortRun {
		return run, true, nil
	}
	span, has, err := rs.SampledSpan(ctx, metric, sel, kind, run)
	if err != nil || !has {
		return run, false, err
	}
	if first := span.Start.Add(-time.Minute); first.After(run.Start) {
		run.Start = first
	}
	if last := span.End.Add(time.Minute); last.Before(run.End) {
		run.End = last
	}
	return run, true, nil
}

// shortRun is the longest run of missing minutes read raw without asking
// whether (or where) it has samples.
const shortRun = 5

// fill copies into dst the minutes of run that dst lacks.
func fill[V any](dst, src map[int64]V, run prom.Range) {
	for t, v := range src {
		if _, ok := dst[t]; !ok && t >= run.Start.Unix() && t <= run.End.Unix() {
			dst[t] = v
		}
	}
}

// missingRuns are the runs of r's minutes that has says are missing, at
// most maxRawRuns of them (beyond that, one run from the first missing
// minute to the last).
func missingRuns(r prom.Range, has func(int64) bool) []prom.Range {
	var runs []prom.Range
	for t := r.Start; !t.After(r.End); t = t.Add(time.Minute) {
		if has(t.Unix()) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].End.Equal(t.Add(-time.Minute)) {
			runs[n-1].End = t
			continue
		}
		runs = append(runs, prom.Range{Start: t, End: t, Scrape: r.Scrape})
	}
	if len(runs) > maxRawRuns {
		runs = []prom.Range{{Start: runs[0].Start, End: runs[len(runs)-1].End, Scrape: r.Scrape}}
	}
	return runs
}

// healthAhead starts a fleet's raw health read beside each of its raw
// histogram reads, of the same kind, so that the health is on its way by
// the time the histograms are in: one round trip to Prometheus fewer.
// readHealth takes the read of the kind the histograms were found as; the
// others are cancelled (auto reads native series first: a classic fleet's
// native health read finds no series and costs little). Recorded health is
// not read ahead: most fleets have no record, and its look-ups would be
// wasted. A nil *healthAhead starts nothing. Its reads are started and
// taken by one goroutine; each is in pending until it returns.
type healthAhead struct {
	ctx     context.Context
	pending *sync.WaitGroup
	src     Source
	metric  string
	sel     selector.Selector
	r       prom.Range
	reads   []*healthRead
}

type healthRead struct {
	kind   prom.Kind
	cancel context.CancelFunc
	done   chan struct{}
	health map[int64]prom.Health
	err    error
}

// raw starts the health read for histograms read raw as kind.
func (hp *healthAhead) raw(kind prom.Kind) {
	if hp == nil {
		return
	}
	if kind == prom.Auto || kind == "" {
		kind = prom.Native // what the raw path reads first
	}
	for _, h := range hp.reads {
		if h.kind == kind {
			return
		}
	}
	ctx, cancel := context.WithCancel(hp.ctx)
	h := &healthRead{kind: kind, cancel: cancel, done: make(chan struct{})}
	hp.reads = append(hp.reads, h)
	hp.pending.Add(1)
	go func() {
		defer hp.pending.Done()
		defer close(h.done)
		defer recovered(&h.err, "reading a fleet's health")
		h.health, h.err = hp.src.FleetHealth(ctx, hp.metric, hp.sel, kind, hp.r)
	}()
}

// take waits for the read ahead of the kind given, if there is one
// (ahead), and cancels every other.
func (hp *healthAhead) take(kind prom.Kind) (h map[int64]prom.Health, ahead bool, err error) {
	if hp == nil {
		return nil, false, nil
	}
	var found *healthRead
	for _, r := range hp.reads {
		if found == nil && r.kind == kind {
			found = r
			continue
		}
		r.cancel()
	}
	hp.reads = nil
	if found == nil {
		return nil, false, nil
	}
	<-found.done
	found.cancel()
	return found.health, true, found.err
}

// drop cancels every read ahead: the fleet needs no health after all.
func (hp *healthAhead) drop() {
	if hp == nil {
		return
	}
	for _, r := range hp.reads {
		r.cancel()
	}
	hp.reads = nil
}
