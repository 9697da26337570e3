package server

import (
	"slices"
	"strings"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// commandCommand answers COMMAND and its subcommands from the command
// table, so that clients (redis-cli's hints among them) see every
// command presenced has and nothing else.
func commandCommand(c *client, args [][]byte) {
	if len(args) == 1 {
		c.out.Array(len(proto.Commands))
		for _, spec := range proto.Commands {
			writeCommandInfo(&c.out.Writer, spec)
		}
		return
	}
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	switch sub.Name {
	case "count":
		c.out.Int(int64(len(proto.Commands)))
	case "list":
		commandList(c, args)
	case "info":
		specs := requestedSpecs(args[2:])
		c.out.Array(len(specs))
		for _, spec := range specs {
			if spec == nil {
				c.out.Null()
			} else {
				writeCommandInfo(&c.out.Writer, spec)
			}
		}
	case "docs":
		specs := requestedSpecs(args[2:])
		n := 0
		for _, spec := range specs {
			if spec != nil {
				n++
			}
		}
		c.out.Map(n)
		for _, spec := range specs {
			if spec != nil {
				c.out.BulkString(spec.FullName())
				writeCommandDocs(&c.out.Writer, spec)
			}
		}
	case "getkeys":
		commandGetKeys(c, args[2:])
	default:
		c.help("COMMAND",
			"(no subcommand)", "    Return details about all commands.",
			"COUNT", "    Return the total number of commands in this server.",
			"LIST", "    Return a list of all commands in this server.",
			"INFO [<command-name> ...]", "    Return details about multiple commands.",
			"DOCS [<command-name> ...]", "    Return documentation details about multiple commands.",
			"GETKEYS <full-command>", "    Return the keys from a full Redis command.")
	}
}

// commandGetKeys answers COMMAND GETKEYS for call, a command with its
// arguments: the keys it names, found as Redis finds them.
func commandGetKeys(c *client, call [][]byte) {
	spec := proto.Lookup(call[0])
	if spec != nil && len(spec.Subcommands) > 0 {
		spec = spec.Sub(call[1])
	}
	switch {
	case spec == nil:
		c.out.Error("ERR Invalid command specified")
		return
	case spec.FirstKey == 0 && spec.Flags&proto.MovableKeys == 0, spec.Flags&proto.PubSub != 0:
		// The shard channels SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH name
		// sit where keys would, but are none.
		c.out.Error("ERR The command has no key arguments")
		return
	case !spec.CheckArity(len(call)):
		c.out.Error("ERR Invalid number of arguments specified for command")
		return
	}
	var keys [][]byte
	if spec.Name == "migrate" {
		keys = migrateKeys(call)
	} else {
		spec.EachKey(call, func(key []byte) { keys = append(keys, key) })
	}
	if len(keys) == 0 {
		c.out.Error("ERR Invalid arguments specified for command")
		return
	}
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.Bulk(k)
	}
}

// migrateKeys returns the keys of a MIGRATE call, as Redis finds them:
// the key argument, or with an empty one the arguments after KEYS (the
// empty key when none follows), and none for a key argument beside KEYS.
func migrateKeys(call [][]byte) [][]byte {
	// The options before KEYS, with the arguments each takes.
	skip := map[string]int{"copy": 0, "replace": 0, "auth": 1, "auth2": 2}
	for i := 6; i < len(call); i++ {
		opt := strings.ToLower(string(call[i]))
		if opt == "keys" {
			if len(call[3]) > 0 {
				return nil
			}
			if i+1 < len(call) {
				return call[i+1:]
			}
			break
		}
		i += skip[opt]
	}
	return call[3:4]
}

// requestedSpecs resolves command names ("get", "client|list"); all
// commands when names is empty. Unknown names give nil entries.
func requestedSpecs(names [][]byte) []*proto.Spec {
	if len(names) == 0 {
		return proto.Commands
	}
	out := make([]*proto.Spec, len(names))
	for i, n := range names {
		out[i] = specNamed(n)
	}
	return out
}

// specNamed returns the command named name, or the subcommand named
// container|subcommand, whatever the case, as Redis's lookupCommandBySds
// finds it; nil if there is none.
func specNamed(name []byte) *proto.Spec {
	parent, sub, hasSub := strings.Cut(string(name), "|")
	spec := proto.Lookup([]byte(parent))
	if spec != nil && hasSub {
		spec = spec.Sub([]byte(sub))
	}
	return spec
}

// commandList answers COMMAND LIST [FILTERBY MODULE name | ACLCAT
// category | PATTERN pattern]. No command comes from a module.
func commandList(c *client, args [][]byte) {
	match := func(*proto.Spec) bool { return true }
	if len(args) > 2 {
		if len(args) != 5 || !strings.EqualFold(string(args[2]), "FILTERBY") {
			c.out.Error(proto.ErrSyntax)
			return
		}
		arg := args[4]
		switch strings.ToLower(string(args[3])) {
		case "module":
			match = func(*proto.Spec) bool { return false }
		case "aclcat":
			match = func(s *proto.Spec) bool {
				return slices.ContainsFunc(s.Categories(), func(cat string) bool { return strings.EqualFold(cat[1:], string(arg)) })
			}
		case "pattern":
			match = func(s *proto.Spec) bool { return store.Match(arg, []byte(s.FullName()), true) }
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	var names []string
	for _, spec := range proto.Commands {
		for _, s := range append([]*proto.Spec{spec}, spec.Subcommands...) {
			if match(s) {
				names = append(names, s.FullName())
			}
		}
	}
	c.out.Array(len(names))
	for _, n := range names {
		c.out.BulkString(n)
	}
}

// writeCommandInfo writes one command's COMMAND INFO entry, in Redis 7's
// ten-field shape.
func writeCommandInfo(w *proto.Writer, spec *proto.Spec) {
	w.Array(10)
	w.BulkString(spec.FullName())
	w.Int(int64(spec.Arity))
	writeStatusSet(w, spec.Flags.Names())
	w.Int(int64(spec.FirstKey))
	w.Int(int64(spec.LastKey))
	w.Int(int64(spec.Step))
	writeStatusSet(w, spec.Categories())
	w.Set(0) // tips
	w.Set(0) // key specifications
	if len(spec.Subcommands) == 0 {
		w.Set(0) // as Redis answers a command without subcommands
		return
	}
	w.Array(len(spec.Subcommands))
	for _, sub := range spec.Subcommands {
		writeCommandInfo(w, sub)
	}
}

// field is one entry of a map reply: its name and what writes its value.
type field struct {
	name  string
	value func(w *proto.Writer)
}

// writeMap writes fields as a map of name, value pairs.
func writeMap(w *proto.Writer, fields []field) {
	w.Map(len(fields))
	for _, f := range fields {
		w.BulkString(f.name)
		f.value(w)
	}
}

// bulkValue writes s as a bulk string.
func bulkValue(s string) func(*proto.Writer) { return func(w *proto.Writer) { w.BulkString(s) } }

// writeCommandDocs writes one command's COMMAND DOCS map.
func writeCommandDocs(w *proto.Writer, spec *proto.Spec) {
	fields := []field{
		{"summary", bulkValue(spec.Summary)},
		{"since", bulkValue(spec.Since)},
		{"group", bulkValue(spec.Group)},
	}
	if spec.Complexity != "" { // MONITOR has none
		fields = append(fields, field{"complexity", bulkValue(spec.Complexity)})
	}
	if len(spec.DocFlags) > 0 {
		fields = append(fields, field{"doc_flags", func(w *proto.Writer) { writeStatusSet(w, spec.DocFlags) }})
	}
	if spec.DeprecatedSince != "" {
		fields = append(fields, field{"deprecated_since", bulkValue(spec.DeprecatedSince)}, field{"replaced_by", bulkValue(spec.ReplacedBy)})
	}
	if len(spec.History) > 0 {
		fields = append(fields, field{"history", func(w *proto.Writer) {
			w.Set(len(spec.History))
			for _, h := range spec.History {
				w.Array(2)
				w.BulkString(h[0])
				w.BulkString(h[1])
			}
		}})
	}
	if args := spec.Args(); len(args) > 0 {
		fields = append(fields, field{"arguments", func(w *proto.Writer) { writeArgs(w, args) }})
	}
	if len(spec.Subcommands) > 0 {
		fields = append(fields, field{"subcommands", func(w *proto.Writer) {
			w.Map(len(spec.Subcommands))
			for _, sub := range spec.Subcommands {
				w.BulkString(sub.FullName())
				writeCommandDocs(w, sub)
			}
		}})
	}
	writeMap(w, fields)
}

// writeArgs writes an "arguments" list of COMMAND DOCS, each argument a
// map with the fields Redis 7 gives it.
func writeArgs(w *proto.Writer, args []proto.Arg) {
	w.Array(len(args))
	for i := range args {
		a := &args[i]
		fields := []field{{"name", bulkValue(a.Name)}, {"type", bulkValue(string(a.Type))}}
		if a.KeySpecIndex >= 0 {
			fields = append(fields, field{"key_spec_index", func(w *proto.Writer) { w.Int(int64(a.KeySpecIndex)) }})
		}
		if a.Token != "" || a.Type == proto.ArgPureToken { // MIGRATE's "" is a token too
			fields = append(fields, field{"token", bulkValue(a.Token)})
		}
		if a.Since != "" {
			fields = append(fields, field{"since", bulkValue(a.Since)})
		}
		if a.DeprecatedSince != "" {
			fields = append(fields, field{"deprecated_since", bulkValue(a.DeprecatedSince)})
		}
		if flags := a.Flags(); len(flags) > 0 {
			fields = append(fields, field{"flags", func(w *proto.Writer) { writeStatusSet(w, flags) }})
		}
		if len(a.Args) > 0 {
			fields = append(fields, field{"arguments", func(w *proto.Writer) { writeArgs(w, a.Args) }})
		}
		writeMap(w, fields)
	}
}

// writeStatusSet writes a set of simple strings, flags.
func writeStatusSet(w *proto.Writer, items []string) {
	w.Set(len(items))
	for _, s := range items {
		w.Simple(s)
	}
}
