// Package waitfor is how sluice's tests wait for something to happen: a
// condition checked every few milliseconds under a deadline, never a
// sleep that hopes the thing has happened.
package waitfor
