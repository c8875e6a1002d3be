package validate

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// jsonField is one field of a struct as encoding/json sees it: fields of
// embedded structs are promoted into their parent, and of several fields with
// the same JSON name only the dominant one is kept (the same rules as
// encoding/json, plus `json:",inline"` on a struct field, the Kubernetes
// convention, which promotes like embedding does).
type jsonField struct {
	name  string              // JSON name
	index []int               // field indexes from the outer struct, through embedded structs
	sf    reflect.StructField // the Go field, for its type and tags
	named bool                // the JSON name came from a json tag
}

// jsonTag splits a json struct tag into the name and whether the field is
// ignored ("-") or inlined (",inline").
func jsonTag(sf reflect.StructField) (name string, ignored, inline bool) {
	tag, ok := sf.Tag.Lookup("json")
	if !ok {
		return "", false, false
	}
	if tag == "-" {
		return "", true, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	for opts != "" {
		var opt string
		opt, opts, _ = strings.Cut(opts, ",")
		if opt == "inline" {
			inline = true
		}
	}
	if !validJSONName(name) {
		name = ""
	}
	return name, false, inline
}

// validJSONName reports whether encoding/json accepts name as a key name.
func validJSONName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// promotes reports whether a struct field's own fields appear in its
// parent's JSON object (an embedded or inline struct without a JSON name),
// and returns the struct type whose fields are promoted.
func promotes(sf reflect.StructField) (reflect.Type, bool) {
	name, ignored, inline := jsonTag(sf)
	if ignored || name != "" || (!sf.Anonymous && !inline) {
		return nil, false
	}
	t := sf.Type
	if t.Kind() == reflect.Pointer && t.Name() == "" {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	return t, true
}

// jsonFields lists the fields of struct type t that appear in its JSON
// object, in declaration order (promoted fields where their embedded struct
// is).
func jsonFields(t reflect.Type) []jsonField {
	type embedded struct {
		typ   reflect.Type
		index []int
	}
	var (
		fields    []jsonField
		next      = []embedded{{typ: t}}
		current   []embedded
		count     map[reflect.Type]int
		nextCount map[reflect.Type]int
		visited   = map[reflect.Type]bool{}
	)
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if !visible(sf) {
					continue
				}
				index := append(slices.Clip(e.index), i)
				if st, ok := promotes(sf); ok {
					nextCount[st]++
					if nextCount[st] == 1 {
						next = append(next, embedded{typ: st, index: index})
					}
					continue
				}
				name, _, _ := jsonTag(sf)
				f := jsonField{name: name, index: index, sf: sf, named: name != ""}
				if f.name == "" {
					f.name = sf.Name
				}
				fields = append(fields, f)
				if count[e.typ] > 1 {
					// The same struct is embedded more than once at this
					// depth: add a twin so that dominance drops both.
					fields = append(fields, f)
				}
			}
		}
	}
	return dominant(fields)
}

// visible reports whether encoding/json looks at a struct field at all.
func visible(sf reflect.StructField) bool {
	if _, ignored, _ := jsonTag(sf); ignored {
		return false
	}
	if sf.Anonymous {
		t := sf.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return sf.IsExported() || t.Kind() == reflect.Struct
	}
	return sf.IsExported()
}

// dominant keeps, for each JSON name, the field that encoding/json would
// use: the shallowest one, then the one named by a json tag; names that stay
// ambiguous are dropped. The result is in index order.
func dominant(fields []jsonField) []jsonField {
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.named != b.named {
			if a.named {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].named != group[1].named {
			out = append(out, group[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// fieldOf returns the field at index inside struct value v, following
// embedded pointers. It returns the invalid Value (absent) when v is invalid
// or an embedded pointer on the way is nil.
func fieldOf(v reflect.Value, index []int) reflect.Value {
	if !v.IsValid() {
		return v
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}
