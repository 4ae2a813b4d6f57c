package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/strictyaml"
)

// loadConfig reads a config file and checks it with check: each command
// validates the blocks it uses (fileConfig.validate for the gateway,
// validateConsumer, validateClient), so a consumer's file needs no
// sources. Unknown keys are errors everywhere, so a misspelt setting is not
// silently left at its default. Errors name the file, the line and column,
// the key's YAML path and what was expected. Relative paths in the file
// resolve against the file's directory. With getenv nil, the sources'
// key_env are not read: a command that uses no source (sluice contracts,
// trace, dlq) runs where the keys are not set.
func loadConfig(path string, getenv func(string) string, check func(fileConfig) error) (fileConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fileConfig{}, err
	}
	return parseConfigFile(path, raw, getenv, check)
}

// parseConfig parses raw as a config file of no name: its errors start
// "config:", and relative paths stay as they are.
func parseConfig(raw []byte, getenv func(string) string, check func(fileConfig) error) (fileConfig, error) {
	return parseConfigFile("", raw, getenv, check)
}

// parseConfigFile parses raw, the config file name. A syntax error, a key
// no block has and a value of the wrong type are *configError (file, line,
// column, path, what was expected); check's errors are given the file and,
// where the path they name is in the file, its line and column.
func parseConfigFile(name string, raw []byte, getenv func(string) string, check func(fileConfig) error) (fileConfig, error) {
	roles, err := rolesOf(raw)
	if err != nil {
		return fileConfig{}, inFile(name, nil, err)
	}
	cfg := defaultFileConfig()
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(raw)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fileConfig{}, syntaxError(name, err)
	}
	if doc.Kind != 0 {
		if err := strictyaml.Check(&doc, reflect.TypeFor[fileConfig](), ""); err != nil {
			var se *strictyaml.Error
			if errors.As(err, &se) {
				return fileConfig{}, &configError{file: name, line: se.Line, column: se.Column, path: se.Path, msg: se.Msg}
			}
			return fileConfig{}, inFile(name, nil, err)
		}
		if err := doc.Decode(&cfg); err != nil {
			return fileConfig{}, inFile(name, nil, fmt.Errorf("config: %w", err))
		}
		if name != "" {
			resolvePaths(&doc, reflect.ValueOf(&cfg).Elem(), filepath.Dir(name))
		}
	}
	cfg.roles = roles
	cfg.Gateway.Topics = cfg.Topics
	for i, s := range cfg.Sources {
		for _, env := range s.KeyEnv {
			if getenv == nil {
				break
			}
			key := getenv(env)
			if key == "" {
				return fileConfig{}, inFile(name, &doc, fmt.Errorf("config: sources[%d].key_env: environment variable %s is empty or unset", i, env))
			}
			s.KeyHashes = append(s.KeyHashes, hashKey(key))
		}
		cfg.Gateway.Sources = append(cfg.Gateway.Sources, s.SourceConfig)
	}
	if err := check(cfg); err != nil {
		return cfg, inFile(name, &doc, err)
	}
	return cfg, nil
}

// configError is an error of a config file at a place in it.
type configError struct {
	file         string
	line, column int // from 1; 0: unknown
	path         string
	msg          string
	err          error // what msg came from, if anything
}

func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString(e.file)
	if e.file == "" {
		b.WriteString("config")
	}
	if e.line > 0 {
		b.WriteString(":" + strconv.Itoa(e.line))
		if e.column > 0 {
			b.WriteString(":" + strconv.Itoa(e.column))
		}
	}
	if e.path != "" {
		b.WriteString(": " + e.path)
	}
	return b.String() + ": " + e.msg
}

func (e *configError) Unwrap() error { return e.err }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError is err, a YAML syntax error, as file:line: syntax error.
func syntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return &configError{file: name, line: line, msg: "syntax error: " + msg, err: err}
}

// inFile gives err, a "config: PATH: ..." error of the file name, the
// file's name and, when doc has the key PATH, its line and column. With
// no name, err is as it was.
func inFile(name string, doc *yaml.Node, err error) error {
	if name == "" {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "config: ")
	ce := &configError{file: name, msg: msg, err: err}
	path, rest, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(path, " ") || doc == nil {
		return ce
	}
	if k := findKey(doc, path); k != nil {
		ce.line, ce.column, ce.path, ce.msg = k.Line, k.Column, path, rest
	}
	return ce
}

// findKey is the key node of the YAML path (kafka.tls.ca_file,
// sources[1].key_env, topics.a.b.C) in n, nil when the file does not set it.
func findKey(n *yaml.Node, path string) *yaml.Node {
	for range 64 {
		switch n.Kind {
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
			continue
		case yaml.AliasNode:
			if n.Alias == nil {
				return nil
			}
			n = n.Alias
			continue
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				rest, ok := strings.CutPrefix(path, k.Value)
				switch {
				case !ok:
					continue
				case rest == "":
					return k
				case strings.HasPrefix(rest, "."):
					if f := findKey(n.Content[i+1], rest[1:]); f != nil {
						return f
					}
				case strings.HasPrefix(rest, "["):
					if f := findIndex(n.Content[i+1], rest); f != nil {
						return f
					}
				}
			}
		}
		return nil
	}
	return nil
}

// findIndex finds "[i].rest" or "[i]" in the list n.
func findIndex(n *yaml.Node, path string) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	end := strings.Index(path, "]")
	if n.Kind != yaml.SequenceNode || end < 0 {
		return nil
	}
	i, err := strconv.Atoi(path[1:end])
	if err != nil || i < 0 || i >= len(n.Content) {
		return nil
	}
	rest := path[end+1:]
	if rest == "" {
		return n.Content[i]
	}
	if rest[0] == '.' {
		return findKey(n.Content[i], rest[1:])
	}
	return nil
}

// isPathKey says whether a key of the file names a file or directory:
// every such key is resolved against the file's directory.
func isPathKey(key string) bool {
	return key == "dir" || key == "path" || key == "descriptor_set" ||
		strings.HasSuffix(key, "_file") || strings.HasSuffix(key, "_files")
}

// resolvePaths makes each relative path the file sets (n, decoded into v)
// relative to dir, the file's directory, instead of the working
// directory. A path the file leaves at its default stays as it is.
func resolvePaths(n *yaml.Node, v reflect.Value, dir string) {
	for n.Kind == yaml.DocumentNode || n.Kind == yaml.AliasNode {
		if n.Kind == yaml.DocumentNode {
			if len(n.Content) == 0 {
				return
			}
			n = n.Content[0]
		} else {
			if n.Alias == nil {
				return
			}
			n = n.Alias
		}
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := strictyaml.Fields(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			for _, f := range fields {
				if f.Key != key {
					continue
				}
				fv := v.FieldByIndex(f.Index)
				if isPathKey(key) {
					resolveValue(fv, dir)
				} else {
					resolvePaths(n.Content[i+1], fv, dir)
				}
			}
		}
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, e := range n.Content {
			if i < v.Len() {
				resolvePaths(e, v.Index(i), dir)
			}
		}
	}
}

// resolveValue resolves a path field: a string or a list of them.
func resolveValue(v reflect.Value, dir string) {
	resolve := func(s reflect.Value) {
		if p := s.String(); p != "" && !filepath.IsAbs(p) && s.CanSet() {
			s.SetString(filepath.Join(dir, p))
		}
	}
	switch {
	case v.Kind() == reflect.String:
		resolve(v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		for i := range v.Len() {
			resolve(v.Index(i))
		}
	}
}
