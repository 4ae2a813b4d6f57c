package contract_test

import (
	"path"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/contract"
)

// BenchmarkCheck checks one realistic event of each example contract, the
// fixture in testdata, in both forms.
func BenchmarkCheck(b *testing.B) {
	r := loadExamples(b)
	for _, typ := range exampleTypes() {
		c := lookup(b, r, typ)
		name := strings.TrimPrefix(path.Ext(typ), ".")
		js := fixture(b, fixtures()[typ])
		bin, err := c.CheckJSON(js)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				if _, err := c.CheckJSON(js); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/json_allow_unknown", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				if _, err := c.CheckJSONAllowUnknown(js); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/binary", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bin)))
			for b.Loop() {
				if _, err := c.CheckBinary(bin); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheckJSONDepth(b *testing.B) {
	js := fixture(b, "order_placed.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		if err := contract.CheckJSONDepth(js, 32); err != nil {
			b.Fatal(err)
		}
	}
}
