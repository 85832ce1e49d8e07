package replica

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/stormsim/stormsim/protocol"
)

// ListenCount is one listener (a client's subscriptions/listen streams,
// named by the io.stormsim/listener _meta of its requests) as this replica
// counted it.
type ListenCount struct {
	Anchor  int64 `json:"anchor"`  // Unix ns: the start of its notification schedule
	Streams int   `json:"streams"` // listen streams it opened here
	Written int64 `json:"written"` // notifications written on them
	// Due is the seq of the last notification its schedule had due when
	// its last stream here closed (at the snapshot while one is open): the
	// notifications sent to it, whether or not a stream carried them.
	Due  int64 `json:"due"`
	open int
}

// listenEnd is closed when the replica starts to drain or dies: a listen
// stream never ends on its own, so a drain ends it at once (the
// subscription's result goes out) rather than at the drain limit.
func (s *Server) endListens() {
	s.listenOnce.Do(func() { close(s.listenEnd) })
}

// listen serves subscriptions/listen (protocol/listen.go): the
// acknowledgement of what the replica honours, then, while the stream is
// open, every notification of the listener's schedule as it falls due,
// each numbered by its seq. A replica that sends no notifications
// honours nothing and answers the subscription's result at once, as
// go-sdk's server does.
func (s *Server) listen(w http.ResponseWriter, r *http.Request, msg rpcMessage) {
	want, ans := protocol.ListenParams(msg.Params)
	if ans.Status != 0 {
		s.rpcFail(w, msg.ID, ans)
		return
	}
	agreed := protocol.Honour(want, s.cfg.NotifyRate > 0)
	out, ok := s.openSSE(w, "")
	if !ok {
		return
	}
	if !s.listenSend(out, protocol.ListenAck(msg.ID, agreed)) {
		return
	}
	if !agreed.Any() {
		s.listenResult(out, msg.ID)
		return
	}
	id, anchor := listenerOf(msg.Params)
	iv := protocol.NotifyInterval(s.cfg.NotifyRate)
	s.countListenOpen(id, anchor, iv)
	defer s.countListenClose(id, anchor, iv)
	seq := protocol.NotifySeq(anchor, time.Now().UnixNano(), iv)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		t.Reset(time.Until(time.Unix(0, anchor+(seq+1)*iv)))
		select {
		case <-r.Context().Done():
			return
		case <-s.callsC.Done():
			// The process dies: no result, unless a drain came first. A
			// drain ends the listens before it kills the calls, and when
			// both are closed by the time this stream wakes, select would
			// pick either.
			select {
			case <-s.listenEnd:
				s.listenResult(out, msg.ID)
			default:
			}
			return
		case <-s.listenEnd:
			s.listenResult(out, msg.ID)
			return
		case <-t.C:
		}
		seq++
		n, _ := protocol.ListenNotification(msg.ID, seq, agreed)
		if !s.countWritten(id, seq) || !s.listenSend(out, n) {
			return
		}
	}
}

// listenResult ends a listen stream with the subscription's result.
func (s *Server) listenResult(out *sse, id json.RawMessage) {
	s.listenSend(out, map[string]any{"jsonrpc": "2.0", "id": id, "result": s.caps.ListenResult(id, serverInfo)})
}

func (s *Server) listenSend(out *sse, m map[string]any) bool {
	b, err := json.Marshal(m)
	return err == nil && out.event("", 0, b) == nil
}

// listenerOf reads the listener's name and anchor from a listen request's
// _meta; one that names none is its own listener, anchored now.
func listenerOf(params json.RawMessage) (string, int64) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var l struct {
		ID     string `json:"id"`
		Anchor int64  `json:"anchor"`
	}
	json.Unmarshal(params, &p) //nolint:errcheck // checked by ListenParams
	if json.Unmarshal(p.Meta[protocol.MetaListener], &l) != nil || l.ID == "" || l.Anchor <= 0 {
		return newStreamID(), time.Now().UnixNano()
	}
	return l.ID, l.Anchor
}

func (s *Server) countListenOpen(id string, anchor, iv int64) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	lc := s.counts.Listeners[id]
	if lc == nil {
		lc = &ListenCount{Anchor: anchor}
		s.counts.Listeners[id] = lc
	}
	lc.Streams++
	lc.open++
	lc.Due = max(lc.Due, protocol.NotifySeq(anchor, time.Now().UnixNano(), iv))
}

func (s *Server) countListenClose(id string, anchor, iv int64) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if lc := s.counts.Listeners[id]; lc != nil {
		lc.open--
		if !s.frozen {
			lc.Due = max(lc.Due, protocol.NotifySeq(anchor, time.Now().UnixNano(), iv))
		}
	}
}

// countWritten counts a notification about to be written to listener id,
// before the write, so that no client holds one the counters lack; false
// when frozen: it must not go out.
func (s *Server) countWritten(id string, seq int64) bool {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if s.frozen {
		return false
	}
	lc := s.counts.Listeners[id]
	lc.Written++
	lc.Due = max(lc.Due, seq)
	s.counts.NotificationsWritten++
	return true
}

// snapshotListeners copies the listeners' counts; one with a stream open
// has due up to now.
func (s *Server) snapshotListeners(out *Counts) {
	now := time.Now().UnixNano()
	iv := protocol.NotifyInterval(s.cfg.NotifyRate)
	out.Listeners = make(map[string]*ListenCount, len(s.counts.Listeners))
	for k, v := range s.counts.Listeners {
		lc := *v
		if lc.open > 0 && !s.frozen {
			lc.Due = max(lc.Due, protocol.NotifySeq(lc.Anchor, now, iv))
		}
		out.Listeners[k] = &lc
	}
	out.NotificationsWritten = s.counts.NotificationsWritten
}
