package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes a as indented JSON, the form of sluice trace --json
// and of the HTTP endpoint.
func (a *Answer) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes a for a terminal: the status line, a "trace <id>"
// line when the answer has a trace id, the path, every audit row as a
// table, and what was searched.
func (a *Answer) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s  %s/%s: %s\n", a.Status, a.Source, a.ID, a.Summary)
	if a.TraceID != "" {
		fmt.Fprintf(w, "trace %s\n", a.TraceID)
	}

	fmt.Fprintf(w, "\npath\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(a.Path) == 0 {
		fmt.Fprintln(tw, "  (no step known)")
	} else {
		fmt.Fprintln(tw, "  AT\tSTEP\tWHERE\tFROM\tNOTE")
	}
	for _, s := range a.Path {
		where := "-"
		if s.Where != nil {
			where = s.Where.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", textTime(s.At), s.Step, where, s.From, dash(s.Note))
	}
	tw.Flush()

	fmt.Fprintf(w, "\naudit rows (%d)\n", len(a.Audit))
	if len(a.Audit) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SEQ\tACTION\tAT\tRECORD\tTYPE\tGROUP\tSINK\tCLASS\tRETRYABLE\tATTEMPT\tDLQ RETRIES\tDETAIL\tREPLAY\tACTOR\tTRACE\tERROR")
		for _, r := range a.Audit {
			rec := "-"
			if r.Topic != "" {
				rec = Position{r.Topic, r.Partition, r.Offset}.String()
			}
			attempt := "-"
			if r.Attempt > 0 {
				attempt = strconv.Itoa(r.Attempt)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Sequence, r.Action, textTime(r.At), rec,
				dash(r.EventType), dash(r.Group), dash(r.Sink), dash(r.Class), r.Retryable, attempt, r.DLQRetries, dash(r.Detail),
				dash(r.ReplayID), dash(r.Actor), dash(r.TraceID), dash(oneLine(r.Error, 80)))
		}
		tw.Flush()
	}

	fmt.Fprintf(w, "\nsearched\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WHAT\tTOPIC\tREAD\tIN RANGE\tFOUND\tPARTITIONS [from,next) of [start,end)\tNOTE")
	for _, s := range a.Searched {
		var parts []string
		for _, r := range s.Partitions {
			parts = append(parts, fmt.Sprintf("%d:[%d,%d) of [%d,%d)", r.Partition, r.From, r.Next, r.Start, r.End))
		}
		note := s.Note
		switch {
		case s.BoundHit && s.TimedOut:
			note = strings.TrimPrefix(note+"; cut by max_records and the timeout", "; ")
		case s.BoundHit:
			note = strings.TrimPrefix(note+"; cut by max_records", "; ")
		case s.TimedOut:
			note = strings.TrimPrefix(note+"; cut by the timeout", "; ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\t%s\n", s.What, dash(s.Topic), s.Read, s.InRange, s.Found, dash(strings.Join(parts, " ")), dash(note))
	}
	tw.Flush()
	bound := "no bound hit"
	if a.BoundHit {
		bound = "a bound was hit: a record may have been missed"
	}
	_, err := fmt.Fprintf(w, "\nread %d records (max_records %d, timeout %s): %s\n", a.RecordsRead, a.Limits.MaxRecords, a.Limits.Timeout, bound)
	return err
}

func textTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
