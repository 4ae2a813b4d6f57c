// Package logtest holds what tests share to read what a component logs.
package logtest
