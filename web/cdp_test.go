package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe:
// the browser reads NUL-terminated JSON commands on its fd 3 and writes
// replies and events on its fd 4. No websocket, no dependency.

// findChromium returns the browser to drive, or skips the test (fails
// under CI=true) when there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("JDWPACCEL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH (CI=true requires it: apt-get install chromium)")
	}
	t.Skip("no chromium on PATH; install Debian's chromium to run the browser tests")
	return ""
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    any             `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type browser struct {
	cmd  *exec.Cmd
	out  *os.File // commands to the browser (its fd 3)
	done chan struct{}

	mu      sync.Mutex // guards nextID, pending, readErr and writes to out
	nextID  int
	pending map[int]chan cdpMsg
	readErr error
	stderr  strings.Builder // written by exec; read after the browser exits
}

// startBrowser starts a headless browser with a blank page; it is closed
// when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := findChromium(t)
	toBrowserR, toBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowserR, fromBrowserW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{out: toBrowserW, done: make(chan struct{}), pending: map[int]chan cdpMsg{}}
	b.cmd = exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-quic", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "--window-size=1280,900",
		"about:blank")
	b.cmd.ExtraFiles = []*os.File{toBrowserR, fromBrowserW}
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	toBrowserR.Close()
	fromBrowserW.Close()
	go b.readLoop(fromBrowserR)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b.call(ctx, "", "Browser.close", nil) //nolint:errcheck // killed below if it did not work
		select {
		case <-b.done:
		case <-ctx.Done():
			b.cmd.Process.Kill() //nolint:errcheck
		}
		b.cmd.Wait() //nolint:errcheck
		toBrowserW.Close()
		if t.Failed() {
			t.Logf("browser stderr:\n%s", tail(b.stderr.String(), 3000))
		}
	})
	return b
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (b *browser) readLoop(r *os.File) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = fmt.Errorf("browser pipe: %w", err)
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMsg
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil || m.ID == 0 {
			continue // events are not used
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends one command and waits for its reply's result.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	if b.readErr != nil {
		b.mu.Unlock()
		return nil, b.readErr
	}
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMsg, 1)
	b.pending[id] = ch
	msg, err := json.Marshal(cdpMsg{ID: id, Method: method, Params: params, SessionID: session})
	if err == nil {
		_, err = b.out.Write(append(msg, 0))
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, errors.New("browser went away")
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab attached in flat session mode.
type page struct {
	b       *browser
	session string
}

func (b *browser) open(ctx context.Context, url string, width, height int) (*page, error) {
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var tg struct{ TargetID string }
	if err := json.Unmarshal(res, &tg); err != nil {
		return nil, err
	}
	res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var at struct{ SessionID string }
	if err := json.Unmarshal(res, &at); err != nil {
		return nil, err
	}
	p := &page{b: b, session: at.SessionID}
	if _, err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	if _, err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}); err != nil {
		return nil, err
	}
	return p, nil
}

// eval evaluates a JavaScript expression (awaiting it if it is a promise)
// and decodes its value into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	res, err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		return fmt.Errorf("javascript: %s %s", e.Text, e.Exception.Description)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// waitFor resolves when the JavaScript expression cond is truthy, checked
// on the page every 50ms, and decodes its value into out; it fails after
// timeout.
func (p *page) waitFor(ctx context.Context, cond string, timeout time.Duration, out any) error {
	js := fmt.Sprintf(`new Promise((resolve, reject) => {
  const t0 = Date.now();
  const check = () => {
    let v;
    try { v = (%s); } catch (e) { v = undefined; }
    if (v) resolve(v);
    else if (Date.now() - t0 > %d) reject(new Error("timed out waiting for: " + %q));
    else setTimeout(check, 50);
  };
  check();
})`, cond, timeout.Milliseconds(), cond)
	return p.eval(ctx, js, out)
}

// screenshot captures the viewport as PNG bytes.
func (p *page) screenshot(ctx context.Context) ([]byte, error) {
	res, err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var r struct {
		Data []byte `json:"data"` // base64 in JSON, decoded by encoding/json
	}
	err = json.Unmarshal(res, &r)
	return r.Data, err
}
