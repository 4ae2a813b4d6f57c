package admin

import (
	"encoding/json"
	"net/http"
)

// WriteJSON answers code with v as indented JSON, not to be cached: the
// form of the admin listener's own endpoints (a component's status, its
// reload, a trace).
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil { // a bug: every field marshals
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
