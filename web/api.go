package web

// APIIndex is the answer of GET /api/v1/: every endpoint of the monitor's
// HTTP server, so that the API can be explored from itself. API.md has
// the details and the JSON of each answer.
type APIIndex struct {
	Version   string     `json:"version"`
	Docs      string     `json:"docs"`
	Endpoints []Endpoint `json:"endpoints"`
}

// Endpoint is one entry of APIIndex.
type Endpoint struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// Returns names the answer's JSON type, as API.md does.
	Returns     string `json:"returns,omitempty"`
	Description string `json:"description"`
	// Requires says when the endpoint exists, if not always.
	Requires string `json:"requires,omitempty"`
}

// apiDocs says where the API is documented.
const apiDocs = "web/API.md in the jdwpaccel sources"

// discoveryNote is the condition of the VM discovery endpoints, which the
// command mounts next to this handler.
const discoveryNote = `jdwpaccel proxy --vm scan: or --vm adb:`

func apiIndex(metrics bool) APIIndex {
	eps := []Endpoint{
		{"GET", "/api/v1/", "APIIndex", "this list", ""},
		{"GET", "/api/v1/vms", "[]VM", "the VMs jdwpaccel is connected to", ""},
		{"GET", "/api/v1/sessions", "[]Session", "the debugger sessions, open ones first", ""},
		{"GET", "/api/v1/vms/{vm}/threads", "[]Thread", "a VM's threads: from DDM (Android), else from the debugger's JDWP conversation", ""},
		{"GET", "/api/v1/vms/{vm}/threads/{thread}/stack", "ThreadStack", "a thread's stack: DDM STKL frames if a DDM client asked, else the frames the debugger last read", ""},
		{"GET", "/api/v1/vms/{vm}/heap?cells=N", "HeapSummary", "a VM's heap map in N cells (default 40000), per-kind statistics and size histogram (Android)", ""},
		{"GET", "/api/v1/vms/{vm}/heap/segments", "HeapSegments", "a VM's raw heap segments (Android)", ""},
		{"POST", "/api/v1/vms/{vm}/heap/request", "", "ask a VM for a heap picture (Content-Type: application/json, 202 Accepted)", ""},
		{"GET", "/api/v1/accel", "Accel", "the speculative cache's figures and their history", ""},
		{"GET", "/api/v1/snapshot", "Snapshot", "everything the page shows but the heap map, at once", ""},
		{"GET", "/api/v1/events", "text/event-stream", "a server-sent \"snapshot\" event every second", ""},
		{"GET", "/api/v1/vms/{vm}/events?after=ID", "text/event-stream", "a VM's events (stops, thread starts and deaths, class prepares, DDM thread changes, sessions) as they happen, from a bounded history; resumes after Last-Event-ID or after", ""},
		{"GET", "/api/v1/discover/vms", "DiscoverSnapshot", "the VMs found, their ports, and which one --listen reaches", discoveryNote},
		{"POST", "/api/v1/discover/select", "DiscoverStatus", `choose the VM --listen reaches: {"vm": "KEY|NAME|PID"}, "" for automatic`, discoveryNote},
	}
	if metrics {
		eps = append(eps, Endpoint{"GET", "/metrics", "text/plain", "Prometheus metrics (METRICS.md)", ""})
	}
	return APIIndex{Version: "v1", Docs: apiDocs, Endpoints: eps}
}
