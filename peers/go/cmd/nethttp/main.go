// Command nethttp is framebench's Go net/http peer: the oracle's routes on the standard
// library's ServeMux and http.FileServer. The query and body routes read the request the
// standard library's way: r.URL.Query(), io.ReadAll(r.Body) and json.NewDecoder(r.Body).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"framebench/peers/go/internal/app"
)

// upgrader is gorilla/websocket's, as its echo example writes it: no origin check (the load
// client sends none), its default buffers, and no compression.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func main() {
	opts, fx, tmpl, store := app.Setup(os.Args[1:])

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "Hello, World!")
	})
	mux.HandleFunc("GET /json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(app.JSON())
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		body, status := store.Get(r.Context(), r.URL.Query().Get("key"))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write(body)
	})
	mux.HandleFunc("GET /template", func(w http.ResponseWriter, r *http.Request) {
		body, err := tmpl.Render()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	})
	mux.HandleFunc("GET /sum", func(w http.ResponseWriter, r *http.Request) {
		ops, ok := app.OperandsFromQuery(r.URL.Query())
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(app.SumText(ops))
	})
	mux.HandleFunc("GET /delay", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		wait, ok := app.WaitFor(q.Get("ms"), q.Has("ms"))
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		body := app.Delay(wait)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
	// The server sets no body limit (http.MaxBytesReader is opt-in): io.ReadAll reads the
	// whole body, a Content-Length or a chunked one.
	mux.HandleFunc("POST /upload", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(app.Digest(body))
	})
	mux.HandleFunc("POST /json_in", func(w http.ResponseWriter, r *http.Request) {
		var ops app.Operands
		if err := json.NewDecoder(r.Body).Decode(&ops); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(app.JSONIn(ops))
	})
	mux.HandleFunc("GET /paste/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, status := fx.Lookup(false, r.PathValue("name"), opts.IO)
		if status != 200 {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
	if opts.IO == "disk" {
		mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.Dir(fx.StaticDir))))
	} else {
		mux.HandleFunc("GET /static/{name}", func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			body, status := fx.Lookup(true, name, "memory")
			if status != 200 {
				w.WriteHeader(status)
				return
			}
			w.Header().Set("Content-Type", app.ContentType(name))
			w.Write(body)
		})
	}

	// WebSocket echo: every message back as it came, text or binary, as gorilla/websocket's
	// echo example does; its default handlers answer a ping with a pong and a close with a close.
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has answered 400
		}
		defer c.Close()
		c.SetReadLimit(app.MaxMessage)
		for {
			kind, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if kind == websocket.TextMessage && !utf8.Valid(msg) {
				// The library leaves UTF-8 to the application ("Applications are responsible
				// for ensuring that text messages are valid UTF-8 encoded text", gorilla's
				// docs); its own Autobahn server checks it so, and closes with 1007.
				bye := websocket.FormatCloseMessage(websocket.CloseInvalidFramePayloadData, "")
				_ = c.WriteControl(websocket.CloseMessage, bye, time.Now().Add(time.Second))
				return
			}
			if err := c.WriteMessage(kind, msg); err != nil {
				return
			}
		}
	})

	var handler http.Handler = cleanOnly(mux)
	if out := opts.LogWriter(); out != nil {
		handler = logger(log.New(out, "", 0), handler)
	}
	// Go's net/http sets TCP_NODELAY on every accepted connection by default.
	srv := &http.Server{
		Handler:           handler,
		IdleTimeout:       app.KeepAlive,
		ReadHeaderTimeout: app.KeepAlive,
	}
	if opts.Protocol == "h2c" {
		serveH2c(srv)
	}
	if opts.TLS {
		// crypto/tls as net/http's docs show it with a certificate held in memory: TLSConfig,
		// then ServeTLS with no files. Under --protocol h2, ServeTLS's own HTTP/2 serves what
		// ALPN chose (h2, the only name offered); otherwise an empty TLSNextProto turns that
		// HTTP/2 off: HTTP/1.1 over TLS only.
		cfg, err := app.TLSConfig(opts.Protocol)
		if err != nil {
			app.Fail(1, err)
		}
		srv.TLSConfig = cfg
		if opts.Protocol != "h2" {
			srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		}
	}
	ln, err := opts.Listen()
	if err != nil {
		app.Fail(1, err)
	}
	opts.Announce(ln)
	// SIGTERM and SIGINT stop the server as a deployment would: Shutdown closes the listener,
	// sends GOAWAY on HTTP/2 connections and waits (2 s at most, framebench's grace) for the
	// requests in flight.
	stopped := make(chan struct{})
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		close(stopped)
	}()
	serve := srv.Serve
	if opts.TLS {
		serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	if err := serve(ln); err != nil && err != http.ErrServerClosed {
		app.Fail(1, err)
	}
	<-stopped
}

// cleanOnly answers 400 to a path that is not clean.
//
// Fairness: ServeMux answers a path with "..", "." or "//" segments with a redirect (307) to
// its cleaned form, which framebench's oracle does not accept for a traversal attempt (it
// wants 400, 403 or 404: a redirect to /secret.txt is not a leak, but every other framework
// refuses). This guard answers 400 where ServeMux would redirect; every other request reaches
// ServeMux unchanged. It costs one path.Clean per request.
func cleanOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if c := path.Clean(p); c != p && c+"/" != p {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection under the logger.
func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}

// Hijack hands the connection to a WebSocket upgrade with the logger on; its line says 101.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.status = http.StatusSwitchingProtocols
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// logger writes one line per request: timestamp peer "METHOD URI" status latency.
func logger(l *log.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: 200}
		next.ServeHTTP(sw, r)
		l.Print(fmt.Sprintf("%s %s \"%s %s\" %d %.6fs", time.Now().UTC().Format(http.TimeFormat),
			r.RemoteAddr, r.Method, r.RequestURI, sw.status, time.Since(start).Seconds()))
	})
}
