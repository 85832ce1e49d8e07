package scenario

import "github.com/stormsim/stormsim/topology"

// validateTSServer checks what the ts-sdk server can run: sessions that live
// in its process, with the SDK's InMemoryEventStore or no store. The SDK
// has no Redis event store and no way to share a session between
// processes.
func (ld *loader) validateTSServer(where string, d *Design) {
	if d.Server != topology.ServerTSSDK {
		return
	}
	if d.Sessions == topology.SessionsShared {
		ld.errorf(where+".server", "the ts-sdk server cannot share sessions between replicas: use sessions = \"local\" or server = %q", topology.ServerReference)
	}
	if d.Events == topology.EventsRedis {
		ld.errorf(where+".server", "the ts-sdk server keeps its events in the SDK's InMemoryEventStore: use events = \"memory\" or \"none\", or server = %q", topology.ServerReference)
	}
	if d.Events == topology.EventsMemory && d.Store.MemoryCapBytes != 0 {
		// The simulator's memory store is the model of the live one: a cap
		// the SDK does not have would make it evict what the SDK keeps.
		ld.errorf(where+".store.memory_cap_bytes", "%d: the ts-sdk server's InMemoryEventStore has no cap; set it to 0 in [design.%s.store]", d.Store.MemoryCapBytes, d.Name)
	}
}
