package proto

import "strings"

// Flag is a property of a command, named as Redis's COMMAND INFO names it.
type Flag uint32

// Command flags, in the order COMMAND INFO lists them. Write and ReadOnly
// decide how the server routes a command; NoAuth marks commands allowed
// before AUTH; NoMulti, commands refused inside MULTI; PubSub marks the
// publish and subscribe commands (and gives them the @pubsub ACL
// category); MovableKeys, commands whose keys the key positions do not
// all locate (MIGRATE's KEYS); the others are reported by COMMAND INFO as
// Redis reports them.
const (
	Write Flag = 1 << iota
	ReadOnly
	DenyOOM
	Admin
	PubSub
	NoScript
	Loading
	Stale
	SkipSlowlog
	Asking
	Fast
	NoAuth
	NoAsyncLoading
	NoMulti
	AllowBusy
	MovableKeys
)

var flagNames = []string{"write", "readonly", "denyoom", "admin", "pubsub", "noscript", "loading", "stale", "skip_slowlog", "asking", "fast", "no_auth", "no_async_loading", "no_multi", "allow_busy", "movablekeys"}

// Names lists the flags set in f, in Redis's order.
func (f Flag) Names() []string {
	var out []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Category is a set of Redis ACL categories.
type Category uint32

// ACL categories, in the order COMMAND INFO lists them (Redis's order,
// less the categories of data types presenced does not have).
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatString
	CatBitmap
	CatHyperLogLog
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

var categoryNames = []string{"@keyspace", "@read", "@write", "@string", "@bitmap", "@hyperloglog", "@pubsub", "@admin", "@fast", "@slow", "@dangerous", "@connection", "@transaction", "@scripting"}

// groupCategories are the categories a command of each group is in.
var groupCategories = map[string]Category{
	"generic": CatKeyspace, "string": CatString, "bitmap": CatBitmap, "hyperloglog": CatHyperLogLog,
	"connection": CatConnection, "transactions": CatTransaction, "scripting": CatScripting,
}

// Categories lists the command's ACL categories, as COMMAND INFO does:
// those of its flags (write, read, pubsub, admin, which is dangerous too,
// fast or else slow), of its group (not for a container, which Redis
// leaves in none), and the ones its table entry adds.
func (s *Spec) Categories() []string {
	c := s.ACL
	for flag, cat := range map[Flag]Category{Write: CatWrite, ReadOnly: CatRead, PubSub: CatPubSub, Admin: CatAdmin | CatDangerous, Fast: CatFast} {
		if s.Flags&flag != 0 {
			c |= cat
		}
	}
	if s.Flags&Fast == 0 {
		c |= CatSlow
	}
	group := s.Group
	if s.Parent != nil {
		group = s.Parent.Group
	}
	if len(s.Subcommands) == 0 {
		c |= groupCategories[group] &^ s.NotACL
	}
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Spec describes one command: what COMMAND INFO and COMMAND DOCS report
// and what the server needs to route and check a call.
type Spec struct {
	// Name is the lower-case command name ("setbit"), or for a subcommand
	// its lower-case name without the parent ("encoding").
	Name string
	// Arity is Redis's arity: the exact argument count including the name
	// when positive, the minimum when negative.
	Arity int
	// Flags are the command's properties.
	Flags Flag
	// ACL are the ACL categories Redis puts the command in besides those
	// its flags and group give (see Categories); NotACL those of its group
	// that Redis leaves it out of.
	ACL, NotACL Category
	// FirstKey, LastKey and Step locate the key arguments (LastKey -1: up
	// to the last argument), as in COMMAND INFO.
	FirstKey, LastKey, Step int
	// Group, Since, Summary and Complexity are the COMMAND DOCS fields; a
	// subcommand without Since or Complexity has its parent's.
	Group, Since, Summary, Complexity string
	// History lists the changes of the command as COMMAND DOCS gives
	// them: the version, then what changed.
	History [][2]string
	// DocFlags, DeprecatedSince and ReplacedBy are COMMAND DOCS's
	// doc_flags ("deprecated", "syscmd"), deprecated_since and
	// replaced_by.
	DocFlags                    []string
	DeprecatedSince, ReplacedBy string
	// ArgSince gives the version that added an argument the command did
	// not have from the start, and ArgDeprecatedSince the version that
	// deprecated one. Each names an argument by its token where it has
	// one ("LADDR"), else by its name ("ip:port").
	ArgSince, ArgDeprecatedSince map[string]string
	// Syntax is the argument synopsis as Redis's documentation writes it,
	// e.g. "key [start end [BYTE | BIT]]"; COMMAND DOCS derives the
	// argument list from it.
	Syntax string
	// Subcommands of a container command such as CLIENT or CONFIG.
	Subcommands []*Spec
	// Parent is the container of a subcommand, nil otherwise.
	Parent *Spec
	// ID is the index of a top-level command in Commands.
	ID int
	// Stat is the index of the command or subcommand in Counted.
	Stat int
}

// EachKey calls f with each key argument of a call whose arguments, the
// name included, are args.
func (s *Spec) EachKey(args [][]byte, f func(key []byte)) {
	last := s.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := s.FirstKey; i > 0 && s.Step > 0 && i <= last && i < len(args); i += s.Step {
		f(args[i])
	}
}

// FullName is "name" for a command and "parent|name" for a subcommand.
func (s *Spec) FullName() string {
	if s.Parent != nil {
		return s.Parent.Name + "|" + s.Name
	}
	return s.Name
}

// CheckArity reports whether argc arguments (the name included) fit.
func (s *Spec) CheckArity(argc int) bool {
	if s.Arity >= 0 {
		return argc == s.Arity
	}
	return argc >= -s.Arity
}

// Sub finds the subcommand named by name, ignoring case, or nil.
func (s *Spec) Sub(name []byte) *Spec {
	for _, c := range s.Subcommands {
		if strings.EqualFold(c.Name, string(name)) {
			return c
		}
	}
	return nil
}

// Commands is the command table, in the order COMMAND lists it.
var Commands = table

// Counted lists what INFO commandstats counts calls of, as Redis 7 does:
// every command and every subcommand of a container command (CONFIG GET
// is counted as config|get, apart from CONFIG SET).
var Counted []*Spec

var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(table))
	for i, c := range table {
		c.ID = i
		c.Stat = len(Counted)
		Counted = append(Counted, c)
		m[c.Name] = c
		for _, s := range c.Subcommands {
			s.Parent = c
			s.Group = c.Group
			if s.Since == "" {
				s.Since = c.Since
			}
			if s.Complexity == "" {
				s.Complexity = c.Complexity
			}
			s.Stat = len(Counted)
			Counted = append(Counted, s)
		}
	}
	return m
}()

// Lookup finds a command by name, ignoring case, without allocating for
// names of ordinary length.
func Lookup(name []byte) *Spec {
	var buf [32]byte
	if len(name) > len(buf) {
		return byName[strings.ToLower(string(name))]
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return byName[string(buf[:len(name)])]
}

var table = []*Spec{
	{Name: "setbit", Arity: 4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.2.0",
		Summary:    "Sets or clears the bit at offset in the string value stored at key",
		Complexity: "O(1)",
		Syntax:     "key offset value"},
	{Name: "getbit", Arity: 3, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.2.0",
		Summary:    "Returns the bit value at offset in the string value stored at key",
		Complexity: "O(1)",
		Syntax:     "key offset"},
	{Name: "bitcount", Arity: -2, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.6.0",
		ArgSince: map[string]string{"index_unit": "7.0.0"}, History: [][2]string{{"7.0.0", "Added the `BYTE|BIT` option."}},
		Summary:    "Count set bits in a string",
		Complexity: "O(N)",
		Syntax:     "key [start end [BYTE | BIT]]"},
	{Name: "bitpos", Arity: -3, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "2.8.7",
		ArgSince: map[string]string{"index_unit": "7.0.0"}, History: [][2]string{{"7.0.0", "Added the `BYTE|BIT` option."}},
		Summary:    "Find first bit set or clear in a string",
		Complexity: "O(N)",
		Syntax:     "key bit [start [end [BYTE | BIT]]]"},
	{Name: "bitop", Arity: -4, Flags: Write | DenyOOM, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", Since: "2.6.0",
		Summary:    "Perform bitwise operations between strings",
		Complexity: "O(N)",
		Syntax:     "operation destkey key [key ...]"},
	{Name: "bitsetex", Arity: -4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Sets bits and arms a deadline in seconds for each of them (presenced)",
		Complexity: "O(N) where N is the number of offsets",
		Syntax:     "key seconds offset [offset ...]"},
	{Name: "bitpsetex", Arity: -4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Sets bits and arms a deadline in milliseconds for each of them (presenced)",
		Complexity: "O(N) where N is the number of offsets",
		Syntax:     "key milliseconds offset [offset ...]"},
	{Name: "bitttl", Arity: 3, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Returns the time to live of a bit in seconds (presenced)",
		Complexity: "O(1)",
		Syntax:     "key offset"},
	{Name: "bitpttl", Arity: 3, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Returns the time to live of a bit in milliseconds (presenced)",
		Complexity: "O(1)",
		Syntax:     "key offset"},
	{Name: "getbits", Arity: -3, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Returns the bit values at several offsets (presenced)",
		Complexity: "O(N) where N is the number of offsets",
		Syntax:     "key offset [offset ...]"},
	{Name: "bitscan", Arity: -3, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Incrementally iterates the offsets of the set bits (presenced)",
		Complexity: "O(1) for every call. O(N) for a complete iteration.",
		Syntax:     "key cursor [COUNT count]"},
	{Name: "bitopcount", Arity: -3, Flags: ReadOnly, FirstKey: 2, LastKey: -1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Counts the set bits of a bitwise operation between strings without storing it (presenced)",
		Complexity: "O(N)",
		Syntax:     "<AND | OR | XOR | NOT | DIFF | DIFF1 | ANDOR | ONE> key [key ...]"},
	{Name: "bitrecent", Arity: -3, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.2.0",
		Summary:    "Counts and lists, newest first, the bits armed within the last seconds (presenced)",
		Complexity: "O(N) where N is the number of bits armed in that time",
		Syntax:     "key seconds [LIMIT count]"},
	{Name: "bitttlrules", Arity: -1, Flags: Write | Admin | NoScript | Loading | Stale, Group: "server", Since: "0.2.0", Summary: "Replaces the bit-TTL rules (presenced; CONFIG SET bit-ttl sends it)", Complexity: "O(N) where N is the number of rules", Syntax: "[pattern seconds [pattern seconds ...]]"},
	{Name: "bitrestore", Arity: -4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.3.0",
		Summary:    "Creates a key from a bitmap in roaring's portable serialization and a byte length (presenced; COPY ... AT sends it)",
		Complexity: "O(N) where N is the size of the payload",
		Syntax:     "key bytelen payload [REPLACE]"},
	{Name: "bithistory", Arity: -4, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "0.3.0",
		Summary:    "Returns the recorded bit counts of a key over a time range, raw or aggregated in steps (presenced)",
		Complexity: "O(N) where N is the number of points in the range",
		Syntax:     "key from to [STEP seconds] [AGGREGATE <LAST | MIN | MAX | AVG>]"},
	{Name: "bitfield", Arity: -2, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "3.2.0",
		Summary:    "Perform arbitrary bitfield integer operations on strings",
		Complexity: "O(1) for each subcommand specified",
		Syntax:     "key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> ...]"},
	{Name: "bitfield_ro", Arity: -2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "bitmap", Since: "6.0.0",
		Summary:    "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
		Complexity: "O(1) for each subcommand specified",
		Syntax:     "key [GET encoding offset [GET encoding offset ...]]"},
	{Name: "get", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Get the value of a key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "set", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		ArgSince: map[string]string{"condition": "2.6.12", "GET": "6.2.0", "EX": "2.6.12", "PX": "2.6.12", "EXAT": "6.2.0", "PXAT": "6.2.0", "KEEPTTL": "6.0.0"}, History: [][2]string{{"2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."}, {"6.0.0", "Added the `KEEPTTL` option."}, {"6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."}, {"7.0.0", "Allowed the `NX` and `GET` options to be used together."}},
		Summary:    "Set the string value of a key",
		Complexity: "O(1)",
		Syntax:     "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"},
	{Name: "setex", Arity: 4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.0.0",
		Summary:    "Set the value and expiration of a key",
		Complexity: "O(1)",
		Syntax:     "key seconds value"},
	{Name: "psetex", Arity: 4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.6.0",
		Summary:    "Set the value and expiration in milliseconds of a key",
		Complexity: "O(1)",
		Syntax:     "key milliseconds value"},
	{Name: "getex", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "6.2.0",
		Summary:    "Get the value of a key and optionally set its expiration",
		Complexity: "O(1)",
		Syntax:     "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]"},
	{Name: "getdel", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "6.2.0",
		Summary:    "Get the value of a key and delete the key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "mget", Arity: -2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Get the values of all the given keys",
		Complexity: "O(N) where N is the number of keys to retrieve.",
		Syntax:     "key [key ...]"},
	{Name: "mset", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1",
		Summary:    "Set multiple keys to multiple values",
		Complexity: "O(N) where N is the number of keys to set.",
		Syntax:     "key value [key value ...]"},
	{Name: "msetnx", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Group: "string", Since: "1.0.1",
		Summary:    "Set multiple keys to multiple values, only if none of the keys exist",
		Complexity: "O(N) where N is the number of keys to set.",
		Syntax:     "key value [key value ...]"},
	{Name: "setnx", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Set the value of a key, only if the key does not exist",
		Complexity: "O(1)",
		Syntax:     "key value"},
	{Name: "getset", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		DocFlags: []string{"deprecated"}, DeprecatedSince: "6.2.0", ReplacedBy: "`SET` with the `!GET` argument",
		Summary:    "Set the string value of a key and return its old value",
		Complexity: "O(1)",
		Syntax:     "key value"},
	{Name: "append", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.0.0",
		Summary:    "Append a value to a key",
		Complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
		Syntax:     "key value"},
	{Name: "strlen", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.2.0",
		Summary:    "Get the length of the value stored in a key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "lcs", Arity: -3, Flags: ReadOnly, FirstKey: 1, LastKey: 2, Step: 1, Group: "string", Since: "7.0.0",
		Summary:    "Find longest common substring",
		Complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
		Syntax:     "key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]"},
	{Name: "pfadd", Arity: -2, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "hyperloglog", Since: "2.8.9",
		Summary:    "Adds the specified elements to the specified HyperLogLog.",
		Complexity: "O(1) to add every element.",
		Syntax:     "key [element [element ...]]"},
	{Name: "pfcount", Arity: -2, Flags: ReadOnly, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", Since: "2.8.9",
		Summary:    "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
		Complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
		Syntax:     "key [key ...]"},
	{Name: "pfmerge", Arity: -2, Flags: Write | DenyOOM, FirstKey: 1, LastKey: -1, Step: 1, Group: "hyperloglog", Since: "2.8.9",
		Summary:    "Merge N different HyperLogLogs into a single one.",
		Complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
		Syntax:     "destkey sourcekey [sourcekey ...]"},
	{Name: "pfdebug", Arity: 3, Flags: Write | DenyOOM | Admin, FirstKey: 2, LastKey: 2, Step: 1, Group: "hyperloglog", Since: "2.8.9",
		DocFlags:   []string{"syscmd"},
		Summary:    "Internal commands for debugging HyperLogLog values",
		Complexity: "N/A",
		Syntax:     "subcommand key"},
	{Name: "pfselftest", Arity: 1, Flags: Admin, Group: "hyperloglog", Since: "2.8.9",
		DocFlags:   []string{"syscmd"},
		Summary:    "An internal command for testing HyperLogLog values",
		Complexity: "N/A",
		Syntax:     ""},
	{Name: "getrange", Arity: 4, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.4.0",
		Summary:    "Get a substring of the string stored at a key",
		Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
		Syntax:     "key start end"},
	{Name: "substr", Arity: 4, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		DocFlags: []string{"deprecated"}, DeprecatedSince: "2.0.0", ReplacedBy: "`GETRANGE`",
		Summary:    "Get a substring of the string stored at a key",
		Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
		Syntax:     "key start end"},
	{Name: "setrange", Arity: 4, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.2.0",
		Summary:    "Overwrite part of a string at key starting at the specified offset",
		Complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
		Syntax:     "key offset value"},
	{Name: "incr", Arity: 2, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Increment the integer value of a key by one",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "incrby", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Increment the integer value of a key by the given amount",
		Complexity: "O(1)",
		Syntax:     "key increment"},
	{Name: "incrbyfloat", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "2.6.0",
		Summary:    "Increment the float value of a key by the given amount",
		Complexity: "O(1)",
		Syntax:     "key increment"},
	{Name: "decr", Arity: 2, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Decrement the integer value of a key by one",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "decrby", Arity: 3, Flags: Write | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string", Since: "1.0.0",
		Summary:    "Decrement the integer value of a key by the given number",
		Complexity: "O(1)",
		Syntax:     "key decrement"},
	{Name: "del", Arity: -2, Flags: Write, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "1.0.0",
		Summary:    "Delete a key",
		Complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
		Syntax:     "key [key ...]"},
	{Name: "unlink", Arity: -2, Flags: Write | Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "4.0.0",
		Summary:    "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
		Complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
		Syntax:     "key [key ...]"},
	{Name: "exists", Arity: -2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "1.0.0",
		History:    [][2]string{{"3.0.3", "Accepts multiple `key` arguments."}},
		Summary:    "Determine if a key exists",
		Complexity: "O(N) where N is the number of keys to check.",
		Syntax:     "key [key ...]"},
	{Name: "type", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0",
		Summary:    "Determine the type stored at key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "keys", Arity: 2, Flags: ReadOnly, ACL: CatDangerous, Group: "generic", Since: "1.0.0",
		Summary:    "Find all keys matching the given pattern",
		Complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
		Syntax:     "pattern"},
	{Name: "scan", Arity: -2, Flags: ReadOnly, Group: "generic", Since: "2.8.0",
		ArgSince: map[string]string{"TYPE": "6.0.0"}, History: [][2]string{{"6.0.0", "Added the `TYPE` subcommand."}},
		Summary:    "Incrementally iterate the keys space",
		Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
		Syntax:     "cursor [MATCH pattern] [COUNT count] [TYPE type]"},
	{Name: "dbsize", Arity: 1, Flags: ReadOnly | Fast, ACL: CatKeyspace, Group: "server", Since: "1.0.0",
		Summary:    "Return the number of keys in the selected database",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "randomkey", Arity: 1, Flags: ReadOnly, Group: "generic", Since: "1.0.0",
		Summary:    "Return a random key from the keyspace",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "rename", Arity: 3, Flags: Write, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "1.0.0",
		Summary:    "Rename a key",
		Complexity: "O(1)",
		Syntax:     "key newkey"},
	{Name: "renamenx", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "1.0.0",
		History:    [][2]string{{"3.2.0", "The command no longer returns an error when source and destination names are the same."}},
		Summary:    "Rename a key, only if the new key does not exist",
		Complexity: "O(1)",
		Syntax:     "key newkey"},
	{Name: "copy", Arity: -3, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 2, Step: 1, Group: "generic", Since: "6.2.0",
		Summary:    "Copy a key",
		Complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
		Syntax:     "source destination [DB destination-db] [REPLACE]"},
	{Name: "dump", Arity: 2, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
		Summary:    "Return a serialized version of the value stored at the specified key.",
		Complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
		Syntax:     "key"},
	{Name: "restore", Arity: -4, Flags: Write | DenyOOM, ACL: CatDangerous, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
		Summary:    "Create a key using the provided serialized value, previously obtained using DUMP.",
		Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
		History:    [][2]string{{"3.0.0", "Added the `REPLACE` modifier."}, {"5.0.0", "Added the `ABSTTL` modifier."}, {"5.0.0", "Added the `IDLETIME` and `FREQ` options."}},
		ArgSince:   map[string]string{"REPLACE": "3.0.0", "ABSTTL": "5.0.0", "IDLETIME": "5.0.0", "FREQ": "5.0.0"},
		Syntax:     "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"},
	// RESTORE-ASKING is RESTORE for the MIGRATE of a node in cluster mode:
	// Redis Cluster's ASKING flag lets it reach a slot being imported.
	{Name: "restore-asking", Arity: -4, Flags: Write | DenyOOM | Asking, ACL: CatKeyspace | CatDangerous, FirstKey: 1, LastKey: 1, Step: 1, Group: "server", Since: "3.0.0",
		DocFlags:   []string{"syscmd"},
		Summary:    "An internal command for migrating keys in a cluster",
		Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
		History:    [][2]string{{"3.0.0", "Added the `REPLACE` modifier."}, {"5.0.0", "Added the `ABSTTL` modifier."}, {"5.0.0", "Added the `IDLETIME` and `FREQ` options."}},
		ArgSince:   map[string]string{"REPLACE": "3.0.0", "ABSTTL": "5.0.0", "IDLETIME": "5.0.0", "FREQ": "5.0.0"},
		Syntax:     "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"},
	{Name: "migrate", Arity: -6, Flags: Write | MovableKeys, ACL: CatDangerous, FirstKey: 3, LastKey: 3, Step: 1, Group: "generic", Since: "2.6.0",
		Summary:    "Atomically transfer a key from a Redis instance to another one.",
		Complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
		History:    [][2]string{{"3.0.0", "Added the `COPY` and `REPLACE` options."}, {"3.0.6", "Added the `KEYS` option."}, {"4.0.7", "Added the `AUTH` option."}, {"6.0.0", "Added the `AUTH2` option."}},
		ArgSince:   map[string]string{"COPY": "3.0.0", "REPLACE": "3.0.0", "KEYS": "3.0.6", "AUTH": "4.0.7", "AUTH2": "6.0.0"},
		Syntax:     `host port <key | ""> destination-db timeout [COPY] [REPLACE] [[AUTH password] | [AUTH2 username password]] [KEYS key [key ...]]`},
	{Name: "move", Arity: 3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0",
		Summary:    "Move a key to another database",
		Complexity: "O(1)",
		Syntax:     "key db"},
	{Name: "expire", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0",
		ArgSince: map[string]string{"condition": "7.0.0"}, History: [][2]string{{"7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."}},
		Summary:    "Set a key's time to live in seconds",
		Complexity: "O(1)",
		Syntax:     "key seconds [NX | XX | GT | LT]"},
	{Name: "pexpire", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
		ArgSince: map[string]string{"condition": "7.0.0"}, History: [][2]string{{"7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."}},
		Summary:    "Set a key's time to live in milliseconds",
		Complexity: "O(1)",
		Syntax:     "key milliseconds [NX | XX | GT | LT]"},
	{Name: "expireat", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.2.0",
		ArgSince: map[string]string{"condition": "7.0.0"}, History: [][2]string{{"7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."}},
		Summary:    "Set the expiration for a key as a UNIX timestamp",
		Complexity: "O(1)",
		Syntax:     "key unix-time-seconds [NX | XX | GT | LT]"},
	{Name: "pexpireat", Arity: -3, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
		ArgSince: map[string]string{"condition": "7.0.0"}, History: [][2]string{{"7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`."}},
		Summary:    "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
		Complexity: "O(1)",
		Syntax:     "key unix-time-milliseconds [NX | XX | GT | LT]"},
	{Name: "ttl", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "1.0.0",
		History:    [][2]string{{"2.8.0", "Added the -2 reply."}},
		Summary:    "Get the time to live for a key in seconds",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "pttl", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.6.0",
		History:    [][2]string{{"2.8.0", "Added the -2 reply."}},
		Summary:    "Get the time to live for a key in milliseconds",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "expiretime", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0",
		Summary:    "Get the expiration Unix timestamp for a key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "pexpiretime", Arity: 2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "7.0.0",
		Summary:    "Get the expiration Unix timestamp for a key in milliseconds",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "persist", Arity: 2, Flags: Write | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "generic", Since: "2.2.0",
		Summary:    "Remove the expiration from a key",
		Complexity: "O(1)",
		Syntax:     "key"},
	{Name: "touch", Arity: -2, Flags: ReadOnly | Fast, FirstKey: 1, LastKey: -1, Step: 1, Group: "generic", Since: "3.2.1",
		Summary:    "Alters the last access time of a key(s). Returns the number of existing keys specified.",
		Complexity: "O(N) where N is the number of keys that will be touched.",
		Syntax:     "key [key ...]"},
	{Name: "object", Arity: -2, Group: "generic", Since: "2.2.3",
		Summary:    "A container for object introspection commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "help", Since: "6.2.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "idletime", Complexity: "O(1)", Arity: 3, Flags: ReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Get the time since a Redis object was last accessed", Syntax: "key"},
			{Name: "freq", Since: "4.0.0", Complexity: "O(1)", Arity: 3, Flags: ReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Get the logarithmic access frequency counter of a Redis object", Syntax: "key"},
			{Name: "encoding", Complexity: "O(1)", Arity: 3, Flags: ReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Inspect the internal encoding of a Redis object", Syntax: "key"},
			{Name: "refcount", Complexity: "O(1)", Arity: 3, Flags: ReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Get the number of references to the value of the key", Syntax: "key"},
		}},
	{Name: "flushdb", Arity: -1, Flags: Write, ACL: CatKeyspace | CatDangerous, Group: "server", Since: "1.0.0",
		ArgSince: map[string]string{"ASYNC": "4.0.0", "SYNC": "6.2.0"}, History: [][2]string{{"4.0.0", "Added the `ASYNC` flushing mode modifier."}, {"6.2.0", "Added the `SYNC` flushing mode modifier."}},
		Summary:    "Remove all keys from the current database",
		Complexity: "O(N) where N is the number of keys in the selected database",
		Syntax:     "[ASYNC | SYNC]"},
	{Name: "flushall", Arity: -1, Flags: Write, ACL: CatKeyspace | CatDangerous, Group: "server", Since: "1.0.0",
		ArgSince: map[string]string{"ASYNC": "4.0.0", "SYNC": "6.2.0"}, History: [][2]string{{"4.0.0", "Added the `ASYNC` flushing mode modifier."}, {"6.2.0", "Added the `SYNC` flushing mode modifier."}},
		Summary:    "Remove all keys from all databases",
		Complexity: "O(N) where N is the total number of keys in all databases",
		Syntax:     "[ASYNC | SYNC]"},
	{Name: "swapdb", Arity: 3, Flags: Write | Fast, ACL: CatKeyspace | CatDangerous, Group: "server", Since: "4.0.0",
		Summary:    "Swaps two Redis databases",
		Complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
		Syntax:     "index1 index2"},
	{Name: "ping", Arity: -1, Flags: Fast, Group: "connection", Since: "1.0.0",
		Summary:    "Ping the server",
		Complexity: "O(1)",
		Syntax:     "[message]"},
	{Name: "echo", Arity: 2, Flags: Loading | Stale | Fast, Group: "connection", Since: "1.0.0",
		Summary:    "Echo the given string",
		Complexity: "O(1)",
		Syntax:     "message"},
	{Name: "quit", Arity: -1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Group: "connection", Since: "1.0.0",
		Summary:    "Close the connection",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "reset", Arity: 1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Group: "connection", Since: "6.2.0",
		Summary:    "Reset the connection",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "auth", Arity: -2, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Group: "connection", Since: "1.0.0",
		ArgSince: map[string]string{"username": "6.0.0"}, History: [][2]string{{"6.0.0", "Added ACL style (username and password)."}},
		Summary:    "Authenticate to the server",
		Complexity: "O(N) where N is the number of passwords defined for the user",
		Syntax:     "[username] password"},
	{Name: "hello", Arity: -1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Group: "connection", Since: "6.0.0",
		History:    [][2]string{{"6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context."}},
		Summary:    "Handshake with Redis",
		Complexity: "O(1)",
		Syntax:     "[protover [AUTH username password] [SETNAME clientname]]"},
	{Name: "client", Arity: -2, Group: "connection", Since: "2.4.0",
		Summary:    "A container for client connection commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "id", Since: "5.0.0", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Returns the client ID for the current connection"},
			{Name: "getname", Since: "2.6.9", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Get the current connection name"},
			{Name: "setname", Since: "2.6.9", Complexity: "O(1)", Arity: 3, Flags: NoScript | Loading | Stale, Summary: "Set the current connection name", Syntax: "connection-name"},
			{Name: "help", Since: "5.0.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "info", Since: "6.2.0", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Returns information about the current client connection."},
			{Name: "setinfo", Arity: 4, Flags: NoScript | Loading | Stale, Summary: "Set client or connection specific info", Syntax: "LIB-NAME libname | LIB-VER libver"},
			{Name: "kill", Complexity: "O(N) where N is the number of client connections", Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Kill the connection of a client",
				History:            [][2]string{{"2.8.12", "Added new filter format."}, {"2.8.12", "`ID` option."}, {"3.2.0", "Added `master` type in for `TYPE` option."}, {"5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."}, {"6.2.0", "`LADDR` option."}},
				ArgSince:           map[string]string{"ID": "2.8.12", "TYPE": "2.8.12", "MASTER": "3.2.0", "REPLICA": "5.0.0", "LADDR": "6.2.0"},
				ArgDeprecatedSince: map[string]string{"ip:port": "2.8.12"},
				Syntax:             "<ip:port | <[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME yes/no] ...>>"},
			{Name: "tracking", Since: "6.0.0", Complexity: "O(1). Some options may introduce additional complexity.", Arity: -3, Flags: NoScript | Loading | Stale, Summary: "Enable or disable server assisted client side caching support", Syntax: "<ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]"},
			{Name: "caching", Since: "6.0.0", Complexity: "O(1)", Arity: 3, Flags: NoScript | Loading | Stale, Summary: "Instruct the server about tracking or not keys in the next request", Syntax: "YES | NO"},
			{Name: "getredir", Since: "6.0.0", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Get tracking notifications redirection client ID if any"},
			{Name: "trackinginfo", Since: "6.2.0", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Return information about server assisted client side caching for the current connection"},
			{Name: "pause", Since: "2.9.50", ArgSince: map[string]string{"mode": "6.2.0"}, History: [][2]string{{"6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option."}}, Complexity: "O(1)", Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Stop processing commands from clients for some time", Syntax: "timeout [WRITE | ALL]"},
			{Name: "reply", Since: "3.2.0", Complexity: "O(1)", Arity: 3, Flags: NoScript | Loading | Stale, Summary: "Instruct the server whether to reply to commands", Syntax: "ON | OFF | SKIP"},
			{Name: "no-evict", Since: "7.0.0", Complexity: "O(1)", Arity: 3, Flags: Admin | NoScript | Loading | Stale, Summary: "Set client eviction mode for the current connection", Syntax: "ON | OFF"},
			{Name: "unpause", Since: "6.2.0", Complexity: "O(N) Where N is the number of paused clients", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "Resume processing of clients that were paused"},
			{Name: "unblock", Since: "5.0.0", Complexity: "O(log N) where N is the number of client connections", Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Unblock a client blocked in a blocking command from a different connection", Syntax: "client-id [TIMEOUT | ERROR]"},
			{Name: "list", ArgSince: map[string]string{"TYPE": "5.0.0", "ID": "6.2.0"}, Complexity: "O(N) where N is the number of client connections", History: [][2]string{{"2.8.12", "Added unique client `id` field."}, {"5.0.0", "Added optional `TYPE` filter."}, {"6.0.0", "Added `user` field."}, {"6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."}, {"7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."}, {"7.0.3", "Added `ssub` field."}}, Arity: -2, Flags: Admin | NoScript | Loading | Stale, Summary: "Get the list of client connections", Syntax: "[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]"},
		}},
	{Name: "select", Arity: 2, Flags: Loading | Stale | Fast, Group: "connection", Since: "1.0.0",
		Summary:    "Change the selected database for the current connection",
		Complexity: "O(1)",
		Syntax:     "index"},
	{Name: "command", Arity: -1, Flags: Loading | Stale, ACL: CatConnection, Group: "server", Since: "2.8.13",
		Summary:    "Get array of Redis command details",
		Complexity: "O(N) where N is the total number of Redis commands",

		Subcommands: []*Spec{
			{Name: "help", Since: "5.0.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, ACL: CatConnection, Summary: "Show helpful text about the different subcommands"},
			{Name: "count", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, ACL: CatConnection, Summary: "Get total number of Redis commands"},
			{Name: "docs", Since: "7.0.0", Complexity: "O(N) where N is the number of commands to look up", Arity: -2, Flags: Loading | Stale, ACL: CatConnection, Summary: "Get array of specific Redis command documentation", Syntax: "[command-name [command-name ...]]"},
			{Name: "info", Complexity: "O(N) where N is the number of commands to look up", History: [][2]string{{"7.0.0", "Allowed to be called with no argument to get info on all commands."}}, Arity: -2, Flags: Loading | Stale, ACL: CatConnection, Summary: "Get array of specific Redis command details, or all when no argument is given.", Syntax: "[command-name [command-name ...]]"},
			{Name: "list", Since: "7.0.0", Arity: -2, Flags: Loading | Stale, ACL: CatConnection, Summary: "Get an array of Redis command names", Syntax: "[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]"},
			{Name: "getkeys", Complexity: "O(N) where N is the number of arguments to the command", Arity: -4, Flags: Loading | Stale, ACL: CatConnection, Summary: "Extract keys given a full Redis command"},
		}},
	{Name: "acl", Arity: -2, Group: "server", Since: "6.0.0",
		Summary:    "A container for Access List Control commands ",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "save", Complexity: "O(N). Where N is the number of configured users.", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "Save the current ACL rules in the configured ACL file"},
			{Name: "cat", Complexity: "O(1) since the categories and commands are a fixed set.", Arity: -2, Flags: NoScript | Loading | Stale, Summary: "List the ACL categories or the commands inside a category", Syntax: "[categoryname]"},
			{Name: "help", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "whoami", Complexity: "O(1)", Arity: 2, Flags: NoScript | Loading | Stale, Summary: "Return the name of the user associated to the current connection"},
			{Name: "dryrun", Since: "7.0.0", Complexity: "O(1).", Arity: -4, Flags: Admin | NoScript | Loading | Stale, Summary: "Returns whether the user can execute the given command without executing the command.", Syntax: "username command [arg [arg ...]]"},
			{Name: "log", Complexity: "O(N) with N being the number of entries shown.", Arity: -2, Flags: Admin | NoScript | Loading | Stale, Summary: "List latest events denied because of ACLs in place", Syntax: "[count | RESET]"},
			{Name: "genpass", Complexity: "O(1)", Arity: -2, Flags: NoScript | Loading | Stale, Summary: "Generate a pseudorandom secure password to use for ACL users", Syntax: "[bits]"},
			{Name: "deluser", Complexity: "O(1) amortized time considering the typical user.", Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Remove the specified ACL users and the associated rules", Syntax: "username [username ...]"},
			{Name: "list", Complexity: "O(N). Where N is the number of configured users.", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "List the current ACL rules in ACL config file format"},
			{Name: "getuser", Complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.", History: [][2]string{{"6.2.0", "Added Pub/Sub channel patterns."}, {"7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation."}}, Arity: 3, Flags: Admin | NoScript | Loading | Stale, Summary: "Get the rules for a specific ACL user", Syntax: "username"},
			{Name: "setuser", Complexity: "O(N). Where N is the number of rules provided.", History: [][2]string{{"6.2.0", "Added Pub/Sub channel patterns."}, {"7.0.0", "Added selectors and key based permissions."}}, Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Modify or create the rules for a specific ACL user", Syntax: "username [rule [rule ...]]"},
			{Name: "users", Complexity: "O(N). Where N is the number of configured users.", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "List the username of all the configured ACL rules"},
			{Name: "load", Complexity: "O(N). Where N is the number of configured users.", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "Reload the ACLs from the configured ACL file"},
		}},
	{Name: "config", Arity: -2, Group: "server", Since: "2.0.0",
		Summary:    "A container for server configuration commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "resetstat", Complexity: "O(1)", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "Reset the stats returned by INFO"},
			{Name: "rewrite", Since: "2.8.0", Complexity: "O(1)", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Summary: "Rewrite the configuration file with the in memory configuration"},
			{Name: "help", Since: "5.0.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "get", Complexity: "O(N) when N is the number of configuration parameters provided", History: [][2]string{{"7.0.0", "Added the ability to pass multiple pattern parameters in one call"}}, Arity: -3, Flags: Admin | NoScript | Loading | Stale, Summary: "Get the values of configuration parameters", Syntax: "parameter [parameter ...]"},
			{Name: "set", Complexity: "O(N) when N is the number of configuration parameters provided", History: [][2]string{{"7.0.0", "Added the ability to set multiple parameters in one call."}}, Arity: -4, Flags: Admin | NoScript | Loading | Stale, Summary: "Set configuration parameters to the given values", Syntax: "parameter value [parameter value ...]"},
		}},
	{Name: "info", Arity: -1, Flags: Loading | Stale, ACL: CatDangerous, Group: "server", Since: "1.0.0",
		History:    [][2]string{{"7.0.0", "Added support for taking multiple section arguments."}},
		Summary:    "Get information and statistics about the server",
		Complexity: "O(1)",
		Syntax:     "[section [section ...]]"},
	{Name: "slowlog", Arity: -2, Group: "server", Since: "2.2.12",
		Summary:    "A container for slow log commands",
		Complexity: "Depends on subcommand.",
		Subcommands: []*Spec{
			{Name: "get", Complexity: "O(N) where N is the number of entries returned", History: [][2]string{{"4.0.0", "Added client IP address, port and name to the reply."}}, Arity: -2, Flags: Admin | Loading | Stale, Summary: "Get the slow log's entries", Syntax: "[count]"},
			{Name: "len", Complexity: "O(1)", Arity: 2, Flags: Admin | Loading | Stale, Summary: "Get the slow log's length"},
			{Name: "help", Since: "6.2.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "reset", Complexity: "O(N) where N is the number of entries in the slowlog", Arity: 2, Flags: Admin | Loading | Stale, Summary: "Clear all entries from the slow log"},
		}},
	{Name: "latency", Arity: -2, Group: "server", Since: "2.8.13",
		Summary:    "A container for latency diagnostics commands",
		Complexity: "Depends on subcommand.",
		Subcommands: []*Spec{
			{Name: "doctor", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Complexity: "O(1)", Summary: "Return a human readable latency analysis report."},
			{Name: "graph", Arity: 3, Flags: Admin | NoScript | Loading | Stale, Complexity: "O(1)", Summary: "Return a latency graph for the event.", Syntax: "event"},
			{Name: "help", Arity: 2, Flags: Loading | Stale, Complexity: "O(1)", Summary: "Show helpful text about the different subcommands."},
			{Name: "histogram", Arity: -2, Flags: Admin | NoScript | Loading | Stale, Since: "7.0.0", Complexity: "O(N) where N is the number of commands with latency information being retrieved.", Summary: "Return the cumulative distribution of latencies of a subset of commands or all.", Syntax: "[command [command ...]]"},
			{Name: "history", Arity: 3, Flags: Admin | NoScript | Loading | Stale, Complexity: "O(1)", Summary: "Return timestamp-latency samples for the event.", Syntax: "event"},
			{Name: "latest", Arity: 2, Flags: Admin | NoScript | Loading | Stale, Complexity: "O(1)", Summary: "Return the latest latency samples for all events."},
			{Name: "reset", Arity: -2, Flags: Admin | NoScript | Loading | Stale, Complexity: "O(1)", Summary: "Reset latency data for one or more events.", Syntax: "[event [event ...]]"},
		}},
	{Name: "save", Arity: 1, Flags: Admin | NoScript | NoAsyncLoading | NoMulti, Group: "server", Since: "1.0.0",
		Summary:    "Synchronously save the dataset to disk",
		Complexity: "O(N) where N is the total number of keys in all databases",
		Syntax:     ""},
	{Name: "bgsave", Arity: -1, Flags: Admin | NoScript | NoAsyncLoading, Group: "server", Since: "1.0.0",
		ArgSince: map[string]string{"SCHEDULE": "3.2.2"}, History: [][2]string{{"3.2.2", "Added the `SCHEDULE` option."}},
		Summary:    "Asynchronously save the dataset to disk",
		Complexity: "O(1)",
		Syntax:     "[SCHEDULE]"},
	{Name: "bgrewriteaof", Arity: 1, Flags: Admin | NoScript | NoAsyncLoading, Group: "server", Since: "1.0.0",
		Summary:    "Asynchronously rewrite the append-only file",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "monitor", Arity: 1, Flags: Admin | NoScript | Loading | Stale, Group: "server", Since: "1.0.0",
		Summary: "Listen for all requests received by the server in real time"},
	{Name: "sync", Arity: 1, Flags: Admin | NoScript | NoAsyncLoading | NoMulti, Group: "server", Since: "1.0.0",
		Summary: "Internal command used for replication"},
	{Name: "replconf", Arity: -1, Flags: Admin | NoScript | Loading | Stale | AllowBusy, Group: "server", Since: "3.0.0",
		Summary:    "An internal command for configuring the replication stream",
		Complexity: "O(1)",
		DocFlags:   []string{"syscmd"}},
	{Name: "lastsave", Arity: 1, Flags: Loading | Stale | Fast, ACL: CatAdmin | CatDangerous, Group: "server", Since: "1.0.0",
		Summary:    "Get the UNIX time stamp of the last successful save to disk",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "time", Arity: 1, Flags: Loading | Stale | Fast, Group: "server", Since: "2.6.0",
		Summary:    "Return the current server time",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "multi", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Group: "transactions", Since: "1.2.0",
		Summary:    "Mark the start of a transaction block",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "exec", Arity: 1, Flags: NoScript | Loading | Stale | SkipSlowlog, Group: "transactions", Since: "1.2.0",
		Summary:    "Execute all commands issued after MULTI",
		Complexity: "Depends on commands in the transaction",
		Syntax:     ""},
	{Name: "discard", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Group: "transactions", Since: "2.0.0",
		Summary:    "Discard all commands issued after MULTI",
		Complexity: "O(N), when N is the number of queued commands",
		Syntax:     ""},
	{Name: "watch", Arity: -2, Flags: NoScript | Loading | Stale | Fast | AllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Group: "transactions", Since: "2.2.0",
		Summary:    "Watch the given keys to determine execution of the MULTI/EXEC block",
		Complexity: "O(1) for every key.",
		Syntax:     "key [key ...]"},
	{Name: "unwatch", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Group: "transactions", Since: "2.2.0",
		Summary:    "Forget about all watched keys",
		Complexity: "O(1)",
		Syntax:     ""},
	{Name: "watchcheck", Arity: -5, Flags: ReadOnly | Fast, Group: "transactions", Since: "0.4.0",
		Summary:    "Checks that watched keys did not change and skips the transaction that follows when one did (presenced; EXEC sends it after WATCH)",
		Complexity: "O(N) where N is the number of keys",
		Syntax:     "count db key version [db key version ...]"},
	{Name: "module", Arity: -2, Group: "server", Since: "4.0.0",
		Summary:    "A container for module commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "load", Complexity: "O(1)", Arity: -3, Flags: Admin | NoScript | NoAsyncLoading, Summary: "Load a module", Syntax: "path [arg [arg ...]]"},
			{Name: "unload", Complexity: "O(1)", Arity: 3, Flags: Admin | NoScript | NoAsyncLoading, Summary: "Unload a module", Syntax: "name"},
			{Name: "help", Since: "5.0.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "list", Complexity: "O(N) where N is the number of loaded modules.", Arity: 2, Flags: Admin | NoScript, Summary: "List all modules loaded by the server"},
			{Name: "loadex", Since: "7.0.0", Complexity: "O(1)", Arity: -3, Flags: Admin | NoScript | NoAsyncLoading, Summary: "Load a module with extended parameters", Syntax: "path [CONFIG name value [CONFIG name value ...]] [ARGS arg [arg ...]]"},
		}},
	{Name: "function", Arity: -2, Group: "scripting", Since: "7.0.0",
		Summary:    "A container for function commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "help", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "flush", Complexity: "O(N) where N is the number of functions deleted", Arity: -2, Flags: Write | NoScript, Summary: "Deleting all functions", Syntax: "[ASYNC | SYNC]"},
		}},
	{Name: "subscribe", Arity: -2, Flags: PubSub | NoScript | Loading | Stale, Group: "pubsub", Since: "2.0.0",
		Summary:    "Listen for messages published to the given channels",
		Complexity: "O(N) where N is the number of channels to subscribe to.",
		Syntax:     "channel [channel ...]"},
	{Name: "unsubscribe", Arity: -1, Flags: PubSub | NoScript | Loading | Stale, Group: "pubsub", Since: "2.0.0",
		Summary:    "Stop listening for messages posted to the given channels",
		Complexity: "O(N) where N is the number of clients already subscribed to a channel.",
		Syntax:     "[channel [channel ...]]"},
	{Name: "psubscribe", Arity: -2, Flags: PubSub | NoScript | Loading | Stale, Group: "pubsub", Since: "2.0.0",
		Summary:    "Listen for messages published to channels matching the given patterns",
		Complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
		Syntax:     "pattern [pattern ...]"},
	{Name: "punsubscribe", Arity: -1, Flags: PubSub | NoScript | Loading | Stale, Group: "pubsub", Since: "2.0.0",
		Summary:    "Stop listening for messages posted to channels matching the given patterns",
		Complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
		Syntax:     "[pattern [pattern ...]]"},
	{Name: "ssubscribe", Arity: -2, Flags: PubSub | NoScript | Loading | Stale, FirstKey: 1, LastKey: -1, Step: 1, Group: "pubsub", Since: "7.0.0",
		Summary:    "Listen for messages published to the given shard channels",
		Complexity: "O(N) where N is the number of shard channels to subscribe to.",
		Syntax:     "shardchannel [shardchannel ...]"},
	{Name: "sunsubscribe", Arity: -1, Flags: PubSub | NoScript | Loading | Stale, FirstKey: 1, LastKey: -1, Step: 1, Group: "pubsub", Since: "7.0.0",
		Summary:    "Stop listening for messages posted to the given shard channels",
		Complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
		Syntax:     "[shardchannel [shardchannel ...]]"},
	{Name: "spublish", Arity: 3, Flags: PubSub | Loading | Stale | Fast, FirstKey: 1, LastKey: 1, Step: 1, Group: "pubsub", Since: "7.0.0",
		Summary:    "Post a message to a shard channel",
		Complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
		Syntax:     "shardchannel message"},
	// PUBLISH reaches the subscribers of the node it is sent to, as in
	// Redis Cluster it counts local receivers; it is not replicated, hence
	// not flagged may_replicate.
	{Name: "publish", Arity: 3, Flags: PubSub | Loading | Stale | Fast, Group: "pubsub", Since: "2.0.0",
		Summary:    "Post a message to a channel",
		Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
		Syntax:     "channel message"},
	{Name: "pubsub", Arity: -2, Group: "pubsub", Since: "2.8.0",
		Summary:    "A container for Pub/Sub commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "numpat", Complexity: "O(1)", Arity: 2, Flags: PubSub | Loading | Stale, Summary: "Get the count of unique patterns pattern subscriptions"},
			{Name: "channels", Complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", Arity: -2, Flags: PubSub | Loading | Stale, Summary: "List active channels", Syntax: "[pattern]"},
			{Name: "numsub", Complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels", Arity: -2, Flags: PubSub | Loading | Stale, Summary: "Get the count of subscribers for channels", Syntax: "[channel [channel ...]]"},
			{Name: "shardchannels", Since: "7.0.0", Complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", Arity: -2, Flags: PubSub | Loading | Stale, Summary: "List active shard channels", Syntax: "[pattern]"},
			{Name: "shardnumsub", Since: "7.0.0", Complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", Arity: -2, Flags: PubSub | Loading | Stale, Summary: "Get the count of subscribers for shard channels", Syntax: "[shardchannel [shardchannel ...]]"},
			{Name: "help", Since: "6.2.0", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
		}},
	{Name: "readonly", Arity: 1, Flags: Loading | Stale | Fast, ACL: CatConnection, Group: "cluster", Since: "3.0.0",
		Summary:    "Enables read queries for a connection to a cluster replica node",
		Complexity: "O(1)"},
	{Name: "readwrite", Arity: 1, Flags: Loading | Stale | Fast, ACL: CatConnection, Group: "cluster", Since: "3.0.0",
		Summary:    "Disables read queries for a connection to a cluster replica node",
		Complexity: "O(1)"},
	{Name: "asking", Arity: 1, Flags: Fast, ACL: CatConnection, Group: "cluster", Since: "3.0.0",
		Summary:    "Sent by cluster clients after an -ASK redirect",
		Complexity: "O(1)"},
	{Name: "cluster", Arity: -2, Group: "cluster", Since: "3.0.0",
		Summary:    "A container for cluster commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "addslots", Arity: -3, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(N) where N is the total number of hash slot arguments", Summary: "Assign new hash slots to receiving node", Syntax: "slot [slot ...]"},
			{Name: "addslotsrange", Arity: -4, Flags: Admin | Stale | NoAsyncLoading, Since: "7.0.0", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Summary: "Assign new hash slots to receiving node", Syntax: "start-slot end-slot [start-slot end-slot ...]"},
			{Name: "bumpepoch", Arity: 2, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Advance the cluster config epoch"},
			{Name: "count-failure-reports", Arity: 3, Flags: Admin | Stale, Complexity: "O(N) where N is the number of failure reports", Summary: "Return the number of failure reports active for a given node", Syntax: "node-id"},
			{Name: "countkeysinslot", Arity: 3, Flags: Stale, Complexity: "O(1)", Summary: "Return the number of local keys in the specified hash slot", Syntax: "slot"},
			{Name: "delslots", Arity: -3, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(N) where N is the total number of hash slot arguments", Summary: "Set hash slots as unbound in receiving node", Syntax: "slot [slot ...]"},
			{Name: "delslotsrange", Arity: -4, Flags: Admin | Stale | NoAsyncLoading, Since: "7.0.0", Complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.", Summary: "Set hash slots as unbound in receiving node", Syntax: "start-slot end-slot [start-slot end-slot ...]"},
			{Name: "failover", Arity: -2, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Forces a replica to perform a manual failover of its master.", Syntax: "[FORCE | TAKEOVER]"},
			{Name: "forget", Arity: 3, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Remove a node from the nodes table", Syntax: "node-id"},
			{Name: "getkeysinslot", Arity: 4, Flags: Stale, Complexity: "O(log(N)) where N is the number of requested keys", Summary: "Return local key names in the specified hash slot", Syntax: "slot count"},
			{Name: "flushslots", Arity: 2, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Delete a node's own slots information"},
			{Name: "info", Arity: 2, Flags: Stale, Complexity: "O(1)", Summary: "Provides info about Redis Cluster node state"},
			{Name: "keyslot", Arity: 3, Flags: Stale, Complexity: "O(N) where N is the number of bytes in the key", Summary: "Returns the hash slot of the specified key", Syntax: "key"},
			{Name: "meet", Arity: -4, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Force a node cluster to handshake with another node", Syntax: "ip port [cluster_bus_port]",
				History: [][2]string{{"4.0.0", "Added the optional `cluster_bus_port` argument."}}, ArgSince: map[string]string{"cluster_bus_port": "4.0.0"}},
			{Name: "myid", Arity: 2, Flags: Stale, Complexity: "O(1)", Summary: "Return the node id"},
			{Name: "nodes", Arity: 2, Flags: Stale, Complexity: "O(N) where N is the total number of Cluster nodes", Summary: "Get Cluster config for the node"},
			{Name: "replicate", Arity: 3, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Reconfigure a node as a replica of the specified master node", Syntax: "node-id"},
			{Name: "reset", Arity: -2, Flags: Admin | NoScript | Stale, Complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", Summary: "Reset a Redis Cluster node", Syntax: "[HARD | SOFT]"},
			{Name: "set-config-epoch", Arity: 3, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Set the configuration epoch in a new node", Syntax: "config-epoch"},
			{Name: "setslot", Arity: -4, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Bind a hash slot to a specific node", Syntax: "slot <IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE>"},
			{Name: "replicas", Arity: 3, Flags: Admin | Stale, Since: "5.0.0", Complexity: "O(1)", Summary: "List replica nodes of the specified master node", Syntax: "node-id"},
			{Name: "slaves", Arity: 3, Flags: Admin | Stale, Complexity: "O(1)", Summary: "List replica nodes of the specified master node",
				DocFlags: []string{"deprecated"}, DeprecatedSince: "5.0.0", ReplacedBy: "`CLUSTER REPLICAS`", Syntax: "node-id"},
			{Name: "saveconfig", Arity: 2, Flags: Admin | Stale | NoAsyncLoading, Complexity: "O(1)", Summary: "Forces the node to save cluster state on disk"},
			{Name: "slots", Arity: 2, Flags: Stale, Complexity: "O(N) where N is the total number of Cluster nodes", Summary: "Get array of Cluster slot to node mappings",
				DocFlags: []string{"deprecated"}, DeprecatedSince: "7.0.0", ReplacedBy: "`CLUSTER SHARDS`",
				History: [][2]string{{"4.0.0", "Added node IDs."}, {"7.0.0", "Added additional networking metadata field."}}},
			{Name: "shards", Arity: 2, Flags: Stale, Since: "7.0.0", Complexity: "O(N) where N is the total number of cluster nodes", Summary: "Get array of cluster slots to node mappings"},
			{Name: "links", Arity: 2, Flags: Stale, Since: "7.0.0", Complexity: "O(N) where N is the total number of Cluster nodes", Summary: "Returns a list of all TCP links to and from peer nodes in cluster"},
			{Name: "help", Arity: 2, Flags: Loading | Stale, Since: "5.0.0", Complexity: "O(1)", Summary: "Show helpful text about the different subcommands"},
		}},
	{Name: "role", Arity: 1, Flags: NoScript | Loading | Stale | Fast, ACL: CatAdmin | CatDangerous, Group: "server", Since: "2.8.12",
		Summary:    "Return the role of the instance in the context of replication",
		Complexity: "O(1)"},
	{Name: "wait", Arity: 3, Flags: NoScript, ACL: CatConnection, NotACL: CatKeyspace, Group: "generic", Since: "3.0.0",
		Summary:    "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
		Complexity: "O(1)",
		Syntax:     "numreplicas timeout"},
	{Name: "replicaof", Arity: 3, Flags: Admin | NoScript | Stale | NoAsyncLoading, Group: "server", Since: "5.0.0",
		Summary:    "Make the server a replica of another instance, or promote it as master.",
		Complexity: "O(1)",
		Syntax:     "<host port | NO ONE>"},
	{Name: "slaveof", Arity: 3, Flags: Admin | NoScript | Stale | NoAsyncLoading, Group: "server", Since: "1.0.0",
		DocFlags: []string{"deprecated"}, DeprecatedSince: "5.0.0", ReplacedBy: "`REPLICAOF`",
		Summary:    "Make the server a replica of another instance, or promote it as master.",
		Complexity: "O(1)",
		Syntax:     "<host port | NO ONE>"},
	{Name: "failover", Arity: -1, Flags: Admin | NoScript | Stale, Group: "server", Since: "6.2.0",
		Summary:    "Start a coordinated failover between this server and one of its replicas.",
		Complexity: "O(1)",
		Syntax:     "[TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]"},
	{Name: "sentinel", Arity: -2, Group: "sentinel", Since: "2.8.4",
		Summary:    "A container for Sentinel commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "get-master-addr-by-name", Arity: 3, Flags: Admin, Complexity: "O(1)", Summary: "Get port and address of a master with that name", Syntax: "master-name"},
			{Name: "masters", Arity: 2, Flags: Admin, Complexity: "O(N) where N is the number of masters", Summary: "List the monitored masters and their state"},
			{Name: "master", Arity: 3, Flags: Admin, Complexity: "O(1)", Summary: "Shows the state and info of the specified master", Syntax: "master-name"},
			{Name: "replicas", Arity: 3, Flags: Admin, Since: "5.0.0", Complexity: "O(N) where N is the number of replicas", Summary: "List the monitored replicas", Syntax: "master-name"},
			{Name: "slaves", Arity: 3, Flags: Admin, Since: "2.8.0", Complexity: "O(N) where N is the number of replicas", Summary: "List the monitored slaves",
				DocFlags: []string{"deprecated"}, DeprecatedSince: "5.0.0", ReplacedBy: "`SENTINEL REPLICAS`", Syntax: "master-name"},
			{Name: "sentinels", Arity: 3, Flags: Admin, Complexity: "O(N) where N is the number of Sentinels", Summary: "List the Sentinel instances", Syntax: "master-name"},
			{Name: "myid", Arity: 2, Flags: Admin, Since: "6.2.0", Complexity: "O(1)", Summary: "Get the Sentinel instance ID"},
			{Name: "ckquorum", Arity: 3, Flags: Admin, Complexity: "O(N) where N is the number of Sentinels", Summary: "Check for a Sentinel quorum", Syntax: "master-name"},
			{Name: "failover", Arity: 3, Flags: Admin, Complexity: "O(1)", Summary: "Force a failover", Syntax: "master-name"},
			{Name: "help", Arity: 2, Flags: Loading | Stale, Since: "6.2.0", Complexity: "O(1)", Summary: "Show helpful text about the different subcommands"},
		}},
	{Name: "raft", Arity: -2, Group: "cluster", Since: "0.1.0",
		Summary:    "A container for raft cluster commands (presenced)",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "help", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "add", Arity: 4, Flags: Admin | NoScript, Summary: "Add a node to the cluster as a voter", Syntax: "node-id raft-address"},
			{Name: "join", Arity: 4, Flags: Admin | NoScript, Summary: "Add a node that asks to join as a voter (what --join sends)", Syntax: "node-id raft-address"},
			{Name: "remove", Arity: 3, Flags: Admin | NoScript, Summary: "Remove a node from the cluster", Syntax: "node-id"},
			{Name: "info", Arity: 2, Flags: Loading | Stale, Summary: "Show this node's raft state and the cluster's members"},
			{Name: "digest", Arity: 2, Flags: Loading | Stale, Summary: "Show the index of the latest entry this node applied and a checksum of its state after it"},
			{Name: "snapshot", Arity: 2, Flags: Admin | NoScript, Summary: "Take a snapshot of this node's state now and compact its raft log"},
			{Name: "readindex", Arity: 2, Flags: Loading | Stale | Fast, Summary: "Confirm leadership and return the index a linearizable read waits for"},
			{Name: "tick", Arity: 2, Flags: Loading | Stale, Summary: "Commit an empty entry that carries the leader's clock and return an index at or after it"},
			{Name: "relay", Arity: 5, Flags: PubSub | Loading | Stale | Fast, Summary: "Open a call of another member's relayed PUBLISH and SPUBLISH commands, which run while no later call of that member has opened", Syntax: "node-id incarnation sequence"},
		}},
	{Name: "history", Arity: -2, Group: "server", Since: "0.3.0",
		Summary:    "A container for history commands (presenced)",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "help", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "info", Arity: -2, Flags: ReadOnly, Summary: "Show the retention, the oldest and newest points and the bytes on disk of the history, or of a key's", Syntax: "[key]"},
			{Name: "purge", Arity: 3, Flags: Write, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Erase every recorded point of a key", Syntax: "key"},
		}},
	{Name: "shutdown", Arity: -1, Flags: Admin | NoScript | Loading | Stale | NoMulti | AllowBusy, Group: "server", Since: "1.0.0",
		ArgSince: map[string]string{"NOW": "7.0.0", "FORCE": "7.0.0", "ABORT": "7.0.0"}, History: [][2]string{{"7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers."}},
		Summary:    "Synchronously save the dataset to disk and then shut down the server",
		Complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
		Syntax:     "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"},
	{Name: "debug", Arity: -2, Flags: Admin | NoScript | Loading | Stale, Group: "server", Since: "1.0.0",
		DocFlags:   []string{"syscmd"},
		Summary:    "A container for debugging commands",
		Complexity: "Depends on subcommand.",
		Syntax:     ""},
	{Name: "memory", Arity: -2, Group: "server", Since: "4.0.0",
		Summary:    "A container for memory diagnostics commands",
		Complexity: "Depends on subcommand.",

		Subcommands: []*Spec{
			{Name: "doctor", Complexity: "O(1)", Arity: 2, Summary: "Outputs memory problems report"},
			{Name: "malloc-stats", Complexity: "Depends on how much memory is allocated, could be slow", Arity: 2, Summary: "Show allocator internal stats"},
			{Name: "purge", Complexity: "Depends on how much memory is allocated, could be slow", Arity: 2, Summary: "Ask the allocator to release memory"},
			{Name: "stats", Complexity: "O(1)", Arity: 2, Summary: "Show memory usage details"},
			{Name: "help", Complexity: "O(1)", Arity: 2, Flags: Loading | Stale, Summary: "Show helpful text about the different subcommands"},
			{Name: "usage", Complexity: "O(N) where N is the number of samples.", Arity: -3, Flags: ReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Summary: "Estimate the memory usage of a key", Syntax: "key [SAMPLES count]"},
		}},
}
