package sim

// memHeap is a binary heap of a memory store's streams (indices into
// memStreams), ordered by their key, then by attempt; a max heap puts the
// largest first. Each stream is in at most one heap, at position hp.
type memHeap struct {
	at  []int32
	max bool
}

func (h *memHeap) less(m *memStreams, a, b int32) bool {
	if ka, kb := m.key[a], m.key[b]; ka != kb {
		return (ka < kb) != h.max
	}
	return (m.ai[a] < m.ai[b]) != h.max
}

func (h *memHeap) set(m *memStreams, j int, i int32) {
	h.at[j] = i
	m.hp[i] = int32(j)
}

func (h *memHeap) push(m *memStreams, i int32) {
	h.at = append(h.at, i)
	m.hp[i] = int32(len(h.at) - 1)
	h.up(m, len(h.at)-1)
}

// top is the first stream; the heap must not be empty.
func (h *memHeap) top() int32 { return h.at[0] }

// remove takes stream i out of the heap.
func (h *memHeap) remove(m *memStreams, i int32) {
	j, n := int(m.hp[i]), len(h.at)-1
	m.hp[i] = -1
	if j != n {
		h.set(m, j, h.at[n])
	}
	h.at = h.at[:n]
	if j != n {
		h.down(m, j)
		h.up(m, j)
	}
}

func (h *memHeap) up(m *memStreams, j int) {
	x := h.at[j]
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(m, x, h.at[p]) {
			break
		}
		h.set(m, j, h.at[p])
		j = p
	}
	h.set(m, j, x)
}

func (h *memHeap) down(m *memStreams, j int) {
	x, n := h.at[j], len(h.at)
	for {
		c := 2*j + 1
		if c >= n {
			break
		}
		if c+1 < n && h.less(m, h.at[c+1], h.at[c]) {
			c++
		}
		if !h.less(m, h.at[c], x) {
			break
		}
		h.set(m, j, h.at[c])
		j = c
	}
	h.set(m, j, x)
}
