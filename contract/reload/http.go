package reload

import (
	"net/http"

	"github.com/sluicehq/sluice/internal/admin"
)

// Status is what GET /admin/contracts answers.
type Status struct {
	// Served is each type's fingerprint served now.
	Served map[string]string `json:"served"`
	// Kept is each type's kept versions, newest first: the ones a
	// consumer decodes records of.
	Kept map[string][]string `json:"kept"`
	// Last is the last reload's result.
	Last Result `json:"last"`
}

// Status is the registry served, the versions kept and the last reload.
func (r *Reloader) Status() Status {
	reg := r.versions.Registry()
	st := Status{Served: servedVersions(reg), Kept: make(map[string][]string, len(reg.Types())), Last: r.Last()}
	for _, typ := range reg.Types() {
		for _, c := range r.versions.History(typ) {
			st.Kept[typ] = append(st.Kept[typ], c.Fingerprint())
		}
	}
	return st
}

// Routes adds the admin listener's contract routes to mux:
//
//	GET  /admin/contracts         Status, 200
//	POST /admin/contracts/reload  a reload's Result: 200 reloaded or
//	                              unchanged, 409 incompatible, 422 failed
//
// The admin listener serves the POST only with a credential (package
// admin); a mux of another server would serve it to anyone.
func (r *Reloader) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /admin/contracts", func(w http.ResponseWriter, _ *http.Request) {
		admin.WriteJSON(w, http.StatusOK, r.Status())
	})
	mux.HandleFunc("POST /admin/contracts/reload", func(w http.ResponseWriter, _ *http.Request) {
		res := r.Reload(TriggerAdmin)
		code := http.StatusOK
		switch res.Result {
		case ResultIncompatible:
			code = http.StatusConflict
		case ResultFailed:
			code = http.StatusUnprocessableEntity
		}
		admin.WriteJSON(w, code, res)
	})
}
