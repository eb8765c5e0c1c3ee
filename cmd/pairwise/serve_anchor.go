package main

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/pairwise-canary/pairwise/pkg/engine"
	"github.com/pairwise-canary/pairwise/pkg/verdict"
)

// A gate that names the canary's revision (Argo Rollouts' pod template
// hash, Flagger's checksum) gets a deployment judged from its start without
// knowing when it started: the server anchors the revision at the moment it
// was first asked about (the judge's --since), so minutes before it, such as
// the previous revision's under the same labels, never count, and the
// deployment gets the anchored boundaries (docs/judgement.md).

// maxAnchors bounds the canaries remembered; the longest unasked go first.
const maxAnchors = 4096

// maxRevision bounds a revision's length: pod template hashes and Flagger
// checksums are about ten characters.
const maxRevision = 128

// validRevision accepts what names a revision: up to maxRevision letters,
// digits, '.', '_' and '-' (empty: none).
func validRevision(rev string) error {
	if len(rev) > maxRevision {
		return fmt.Errorf("revision: %d characters, at most %d", len(rev), maxRevision)
	}
	for _, c := range rev {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("revision %q: letters, digits, '.', '_' and '-' only", rev)
		}
	}
	return nil
}

// anchors remembers, per canary, the revision being judged and the moment
// it was first asked about: its deployment start, which engine.FirstMinute
// rounds up to the first whole minute as it does the judge's --since, so
// that nothing of the minute before the revision was seen counts. Another
// revision of the canary starts anew, and so does a revision asked about
// again after another one (a revert, or a retry after a newer canary): the
// minutes of the revision in between must not count against it. An anchor
// is kept while its revision is asked about; one not asked about for a day
// (verdict.MinutesPerDay) is forgotten, and the revision, asked about
// again, starts anew. A deployment older than a day keeps its start: the
// engine then judges it as it judges a --since that old (sliding windows,
// "Past the window" in docs/judgement.md). A request about an earlier
// moment keeps the anchor (it is too early to judge). Replays (requests
// that name the window's end) anchor each revision apart, as first asked
// about, and never move a gate's.
type anchors struct {
	mu    sync.Mutex
	since map[[sha256.Size]byte]anchor
}

// anchor is a canary's revision, its deployment start and the last time it
// was asked about, and the rollout step asked about last and when it was
// first asked about.
type anchor struct {
	revision    string
	since, last time.Time
	step        string
	stepSince   time.Time
}

// asker is who asks about a canary: the gate (a Flagger canary's
// namespace/name; empty for the decision endpoint), so that two gates on
// one canary of the config keep their own anchors, the revision, and the
// rollout step (Argo Rollouts' step argument; empty: none).
type asker struct{ gate, revision, step string }

// anchored is where a revision's judgement starts: its deployment start,
// and, when the rollout has moved to another step since (a setWeight), the
// moment that step was first asked about (zero otherwise).
type anchored struct{ since, step time.Time }

func newAnchors() *anchors { return &anchors{since: map[[sha256.Size]byte]anchor{}} }

// anchorFor is the deployment start of the canary req describes at the
// asker's revision, first asked about at ref, and the start of its step;
// replays (requests about a past window) keep anchors apart from the
// gates'. A step asked about after another step of the revision starts
// then; the first step asked about is the deployment's. Requests without a
// step leave it alone and get none.
func (a *anchors) anchorFor(req engine.Request, ask asker, replay bool, ref time.Time) anchored {
	// Hashed: a canary described by long matchers costs 32 bytes. Replays
	// are no timeline of deployments: each revision replayed keeps its own.
	rev, slot := ask.revision, ""
	if replay {
		slot = rev
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s\x00%v\x00%s\x00%s", req.Metric, req.Baseline.String(), req.Canary.String(), req.Kind, replay, slot, ask.gate))
	ref = ref.UTC()
	const day = verdict.MinutesPerDay * time.Minute
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.since[key]; ok && s.revision == rev && ref.Sub(s.last) < day {
		if ref.After(s.last) {
			s.last = ref
		}
		// A request without a step (a background analysis) neither moves
		// the step nor waits for it; the first step named is the
		// deployment's, and a later one starts where it is first named.
		switch {
		case ask.step == "" || ask.step == s.step || replay:
		case s.step == "":
			s.step = ask.step
		case ref.After(s.stepSince):
			s.step, s.stepSince = ask.step, ref
		}
		a.since[key] = s
		out := anchored{since: s.since}
		if ask.step != "" && s.stepSince.After(s.since) {
			out.step = s.stepSince
		}
		return out
	}
	for k, s := range a.since {
		if ref.Sub(s.last) >= day {
			delete(a.since, k)
		}
	}
	if _, ok := a.since[key]; !ok && len(a.since) >= maxAnchors {
		var oldest [sha256.Size]byte
		first := true
		for k, s := range a.since {
			if first || s.last.Before(a.since[oldest].last) {
				oldest, first = k, false
			}
		}
		delete(a.since, oldest)
	}
	a.since[key] = anchor{revision: rev, since: ref, last: ref, step: ask.step, stepSince: ref}
	return anchored{since: ref}
}
