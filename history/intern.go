package history

// Interner gives back one string for each distinct id it is given, so that
// the records that carry the same session id share its bytes: a
// history's memory then grows with its distinct ids, not with the requests
// that repeat them (a server's session id may be as long as
// limits.session_id_bytes, and an SDK client's recorder reads it afresh
// from every request). The zero value is ready; it is not safe for
// concurrent use.
type Interner struct{ seen map[string]string }

// Of is s, or the string equal to s that Of was given first.
func (in *Interner) Of(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.seen[s]; ok {
		return v
	}
	if in.seen == nil {
		in.seen = map[string]string{}
	}
	in.seen[s] = s
	return s
}

// internIDs makes h's equal session ids share one string each, as the
// recorders do: a history read back from its file holds a copy per record
// otherwise.
func (h *History) internIDs() {
	var in Interner
	for i := range h.Requests {
		h.Requests[i].SessionID = in.Of(h.Requests[i].SessionID)
	}
	for i := range h.Produced {
		h.Produced[i].Session = in.Of(h.Produced[i].Session)
	}
}
