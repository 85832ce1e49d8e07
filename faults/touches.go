package faults

// Target is what a step acts on; a fault's Targets are its steps' together.
// The engines and the loader ask what a fault touches (the store? only the
// clients?) through Touches, never by comparing kind names, so a new kind
// made of existing steps is known by what it does.
type Target uint8

const (
	// TargetReplica: a replica's process (stop, start, scale).
	TargetReplica Target = 1 << iota
	// TargetStore: the event and session store (Redis).
	TargetStore
	// TargetNetwork: the network between the LB and the replicas
	// (partition, latency) and the LB's health checks.
	TargetNetwork
	// TargetClients: the clients' own connections (a drop).
	TargetClients
)

// Target is what a step of kind k acts on.
func (k StepKind) Target() Target {
	switch k {
	case StepStop, StepStart, StepScale:
		return TargetReplica
	case StepStoreDown, StepStoreUp, StepStoreRestart:
		return TargetStore
	case StepClientDrop:
		return TargetClients
	}
	return TargetNetwork // partition, heal, latency, health-check delay
}

// Touches is what fault f's steps act on in ctx, together.
func Touches(f Fault, ctx Context) Target {
	var t Target
	for _, s := range f.Steps(ctx) {
		t |= s.Kind.Target()
	}
	return t
}

// TouchesStore reports whether fault f acts on the store.
func TouchesStore(f Fault, ctx Context) bool { return Touches(f, ctx)&TargetStore != 0 }

// ClientsOnly reports whether fault f acts on the clients alone, so that it
// needs no control of the servers' processes, the LB or the store.
func ClientsOnly(f Fault, ctx Context) bool { return Touches(f, ctx) == TargetClients }
