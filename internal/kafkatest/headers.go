package kafkatest

import "github.com/twmb/franz-go/pkg/kgo"

// HeadersFromBytes splits b into record headers for fuzz targets: each
// pair is a key and a value separated by 0x00, pairs separated by 0x01.
func HeadersFromBytes(b []byte) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	start := 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == 0x01 {
			pair := b[start:i]
			start = i + 1
			k, v := pair, []byte(nil)
			for j, c := range pair {
				if c == 0 {
					k, v = pair[:j], pair[j+1:]
					break
				}
			}
			hs = append(hs, kgo.RecordHeader{Key: string(k), Value: v})
		}
	}
	return hs
}

// HeadersToBytes is the inverse of HeadersFromBytes, for fuzz seeds.
func HeadersToBytes(hs []kgo.RecordHeader) []byte {
	var b []byte
	for i, h := range hs {
		if i > 0 {
			b = append(b, 0x01)
		}
		b = append(b, h.Key...)
		b = append(b, 0)
		b = append(b, h.Value...)
	}
	return b
}
