package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"
)

// syncBuffer is an io.WriteCloser safe for the stream's writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Close() error { return nil }

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FuzzDecode feeds arbitrary input, then a ping, to a Conn. Whatever the
// input, the daemon must not panic, every line it writes must be a JSON-RPC
// 2.0 object, and the ping after the input must be answered.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{not json`, `[1,2]`, `42`, "\r\n\r\n", `{"jsonrpc":"2.0","id":-1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":"a","result":null}`, `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		out := &syncBuffer{}
		in := input + "\n" + `{"jsonrpc":"2.0","id":"fuzz-end","method":"ping"}` + "\n"
		c := NewConn(bytes.NewReader([]byte(in)), out, Options{MaxLineBytes: 1 << 16})
		c.Handle("ping", func(context.Context, *Request) (any, error) { return struct{}{}, nil })
		if err := c.Serve(t.Context()); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		sawEnd := false
		sc := bufio.NewScanner(bytes.NewReader([]byte(out.String())))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("output line is not a JSON object: %q", sc.Text())
			}
			if string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("output line without jsonrpc 2.0: %q", sc.Text())
			}
			if string(m["id"]) == `"fuzz-end"` {
				sawEnd = true
			}
		}
		if !sawEnd {
			t.Fatalf("ping after the input was not answered; output:\n%s", out.String())
		}
	})
}

var _ io.WriteCloser = (*syncBuffer)(nil)
