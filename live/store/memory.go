package store

import (
	"context"
	"sort"
	"sync"
)

// Memory is go-sdk's MemoryEventStore in behaviour: one store for the whole
// replica, capped in bytes; when full it drops the oldest event of every
// stream in turn until it fits. It lives and dies with its process.
type Memory struct {
	maxBytes int64 // fixed at creation; 0 = no cap
	overhead int64 // bytes per event beyond its data

	mu      sync.Mutex // guards the fields below
	nBytes  int64
	streams map[string]map[string]*memStream
}

type memStream struct {
	first  int64 // index of events[0], or of the next event when empty
	events []Event
}

var _ Events = (*Memory)(nil)

// NewMemory returns a store capped at maxBytes (0 = no cap), counting
// overhead bytes per event beyond its data.
func NewMemory(maxBytes, overhead int64) *Memory {
	return &Memory{maxBytes: maxBytes, overhead: overhead, streams: map[string]map[string]*memStream{}}
}

// Append stores the event, then purges while over the cap.
func (m *Memory) Append(_ context.Context, session, stream string, ev Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := m.streams[session]
	if ss == nil {
		ss = map[string]*memStream{}
		m.streams[session] = ss
	}
	s := ss[stream]
	if s == nil {
		s = &memStream{first: ev.Index}
		ss[stream] = s
	}
	s.events = append(s.events, ev) // kept as it is (Events.Append)
	m.nBytes += int64(len(ev.Data)) + m.overhead
	for m.maxBytes > 0 && m.nBytes > m.maxBytes {
		if !m.purgeRound() {
			break
		}
	}
	return nil
}

// purgeRound drops the oldest event of every non-empty stream, in a fixed
// order; it reports whether it dropped anything.
func (m *Memory) purgeRound() bool {
	dropped := false
	for _, sess := range sortedKeys(m.streams) {
		ss := m.streams[sess]
		for _, name := range sortedKeys(ss) {
			s := ss[name]
			if len(s.events) == 0 {
				continue
			}
			m.nBytes -= int64(len(s.events[0].Data)) + m.overhead
			s.events = s.events[1:]
			s.first++
			dropped = true
		}
	}
	return dropped
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// After returns the events after the cursor, or ErrPurged when the first of
// them was dropped.
func (m *Memory) After(_ context.Context, session, stream string, after int64) ([]Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[session][stream]
	if s == nil {
		return nil, ErrUnknownStream
	}
	if after+1 < s.first {
		return nil, ErrPurged
	}
	skip := after + 1 - s.first
	if skip >= int64(len(s.events)) {
		return nil, nil
	}
	return append([]Event(nil), s.events[skip:]...), nil
}

// SessionClosed forgets the session's streams.
func (m *Memory) SessionClosed(_ context.Context, session string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.streams[session] {
		for _, e := range s.events {
			m.nBytes -= int64(len(e.Data)) + m.overhead
		}
	}
	delete(m.streams, session)
	return nil
}

// Bytes is what the store holds now.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nBytes
}

// First is the first index the store still holds for the stream (one past
// the last event appended when it holds none of them), and false when it
// holds no such stream: the evictions a reconciliation can see.
func (m *Memory) First(session, stream string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[session][stream]
	if s == nil {
		return 0, false
	}
	return s.first, true
}
