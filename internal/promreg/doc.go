// Package promreg registers a component's collectors as one unit: all of
// them or none, so a component that fails to start leaves its registry as
// it found it, and one that stops can make way for its successor.
package promreg
