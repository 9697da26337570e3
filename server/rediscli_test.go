package server

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// updateGolden makes golden-file tests rewrite their expected output
// from what the server now produces: go test ./server -run CLI -update.
var updateGolden = flag.Bool("update", false, "rewrite the expected output in testdata/cli")

// A redis-cli session script (testdata/cli/*.txt) holds the commands and
// redis-cli's expected output: a line "> CMD" is a command, typed as in
// redis-cli, and the lines after it, up to the next command, are what
// redis-cli prints for it (in its human-readable --no-raw form). Lines
// starting with '#' before a command are comments. Each file is one
// redis-cli session, so SELECT carries over from one command to the
// next; MULTI cannot be used (see cliMarker).

// cliStep is one command of a session script and its expected output.
type cliStep struct {
	comments []string
	command  string
	output   []string
}

// cliMarker is echoed after every command, so that the session's output
// can be split into each command's output. A queued ECHO would print
// QUEUED instead, so scripts cannot use MULTI.
const cliMarker = "--- presenced cli test: end of reply ---"

// readCLIScript parses a session script. Comments at its end make a
// last step without a command.
func readCLIScript(file string) ([]cliStep, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var steps []cliStep
	var comments []string
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "> "):
			cmd := strings.TrimPrefix(line, "> ")
			if f := strings.Fields(cmd); len(f) > 0 && strings.EqualFold(f[0], "MULTI") {
				return nil, fmt.Errorf("%s:%d: MULTI cannot be used in a session script", file, i+1)
			}
			steps = append(steps, cliStep{comments: comments, command: cmd})
			comments = nil
		case strings.HasPrefix(line, "#") || (len(steps) == 0 && line == ""):
			comments = append(comments, line)
		case len(steps) == 0 || len(comments) > 0:
			return nil, fmt.Errorf("%s:%d: output that does not follow a command", file, i+1)
		default:
			steps[len(steps)-1].output = append(steps[len(steps)-1].output, line)
		}
	}
	if len(comments) > 0 {
		steps = append(steps, cliStep{comments: comments})
	}
	return steps, nil
}

// writeCLIScript writes steps back in the script format.
func writeCLIScript(file string, steps []cliStep) error {
	var b strings.Builder
	for _, s := range steps {
		for _, c := range s.comments {
			b.WriteString(c + "\n")
		}
		if s.command == "" {
			continue
		}
		b.WriteString("> " + s.command + "\n")
		for _, o := range s.output {
			b.WriteString(o + "\n")
		}
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// runCLI runs redis-cli against addr with args and stdin, and returns
// its standard output.
func runCLI(t *testing.T, cli, addr, stdin string, args ...string) string {
	t.Helper()
	_, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, cli, append([]string{"-h", "127.0.0.1", "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("redis-cli %q: %v\nstderr: %s", args, err, stderr.String())
	}
	return stdout.String()
}

func TestCLISessions(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	files, err := filepath.Glob(filepath.Join("testdata", "cli", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session scripts in testdata/cli: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			steps, err := readCLIScript(file)
			if err != nil {
				t.Fatal(err)
			}
			var stdin strings.Builder
			var cmds []*cliStep
			for i := range steps {
				if steps[i].command != "" {
					fmt.Fprintf(&stdin, "%s\nECHO %q\n", steps[i].command, cliMarker)
					cmds = append(cmds, &steps[i])
				}
			}
			out := runCLI(t, cli, startServer(t).Addr(), stdin.String(), "--no-raw")
			outputs := strings.Split(out, fmt.Sprintf("%q\n", cliMarker))
			if len(outputs) != len(cmds)+1 || outputs[len(cmds)] != "" {
				t.Fatalf("redis-cli printed %d replies for %d commands:\n%s", len(outputs)-1, len(cmds), out)
			}
			changed := false
			for i, step := range cmds {
				got := strings.Split(strings.TrimSuffix(outputs[i], "\n"), "\n")
				if slices.Equal(got, step.output) {
					continue
				}
				changed = true
				if !*updateGolden {
					t.Errorf("> %s\ngot:\n%s\nwant:\n%s", step.command, strings.Join(got, "\n"), strings.Join(step.output, "\n"))
				}
				step.output = got
			}
			if changed && *updateGolden {
				if err := writeCLIScript(file, steps); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", file)
			}
		})
	}
}

// TestCLICommandDocs checks the reply redis-cli's interactive mode asks
// for at start-up, to build its command hints.
func TestCLICommandDocs(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	out := runCLI(t, cli, startServer(t).Addr(), "", "COMMAND", "DOCS", "get")
	for _, want := range []string{"get\n", "summary\nGet the value of a key\n", "group\nstring\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("redis-cli COMMAND DOCS get printed %q, lacking %q", out, want)
		}
	}
}

// terminal collects a program's output and lets a test wait for text in
// it.
type terminal struct {
	mu      sync.Mutex
	out     []byte
	changed chan struct{} // closed and replaced on each write
}

func newTerminal() *terminal { return &terminal{changed: make(chan struct{})} }

func (term *terminal) Write(p []byte) (int, error) {
	term.mu.Lock()
	defer term.mu.Unlock()
	term.out = append(term.out, p...)
	close(term.changed)
	term.changed = make(chan struct{})
	return len(p), nil
}

// waitFor waits until the output holds want after offset from, and
// returns the offset just past it.
func (term *terminal) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	timeout := time.After(ioTimeout)
	for {
		term.mu.Lock()
		i := bytes.Index(term.out[from:], []byte(want))
		out, changed := string(term.out), term.changed
		term.mu.Unlock()
		if i >= 0 {
			return from + i + len(want)
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("waiting for %q; the terminal shows %q", want, out[from:])
		}
	}
}

// TestCLIInteractive runs redis-cli on a terminal, as a person does: it
// must start (asking for COMMAND DOCS), show a command's hint while it is
// typed, and run it.
func TestCLIInteractive(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	script := requireTool(t, "script") // gives redis-cli a terminal
	srv := startServer(t)
	_, port, _ := strings.Cut(srv.Addr(), ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A terminal size spares linenoise from asking the terminal where
	// its cursor is.
	cmd := osexec.CommandContext(ctx, script, "-qfec", "stty cols 200 rows 50; exec "+cli+" -h 127.0.0.1 -p "+port, os.DevNull)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TERM=xterm")
	term := newTerminal()
	cmd.Stdout, cmd.Stderr = term, term
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel()
	typed := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s); err != nil {
			t.Fatal(err)
		}
	}
	// Type only at a prompt: between commands the terminal is not in raw
	// mode, and linenoise drops what was typed when it enters it again.
	prompt := "127.0.0.1:" + port + "> "
	at := term.waitFor(t, 0, prompt)
	typed("SETBIT ")
	at = term.waitFor(t, at, "key offset value")
	for _, step := range []struct{ rest, reply string }{
		{"online:bitmap:3 1234567 1\r", "(integer) 0"},
		{"BITCOUNT online:bitmap:3\r", "(integer) 1"},
		{"NOSUCH\r", "(error) ERR unknown command 'NOSUCH', with args beginning with:"},
	} {
		typed(step.rest)
		at = term.waitFor(t, at, step.reply)
		at = term.waitFor(t, at, prompt)
	}
	typed("quit\r")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("redis-cli: %v; the terminal shows %q", err, term.out)
	}

	_, fields := infoFields(t, dial(t, srv.Addr()).do("INFO", "commandstats"))
	if st := fields["cmdstat_command|docs"]; !strings.HasPrefix(st, "calls=") || strings.HasPrefix(st, "calls=0,") || !strings.HasSuffix(st, ",failed_calls=0") {
		t.Errorf("redis-cli's start-up COMMAND DOCS call: cmdstat_command|docs = %q", st)
	}
}
