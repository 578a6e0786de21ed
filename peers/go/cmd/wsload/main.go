// Command wsload is the independent witness for framebench's WebSocket rate (issue 60): a small
// load client on gorilla/websocket, the client most Go WebSocket users reach for. It holds -c
// connections to -url, each writing -pipeline text messages of -size bytes and reading their
// echoes, over and over, for -warmup and then -d; it counts the echoes of the recorded window,
// checks each byte for byte, and prints one JSON line: {"messages", "seconds", "rate",
// "mismatches", "errors"}. scripts/vs-wsload.sh runs it beside `framebench load --protocol ws`
// on the same server and cores.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	url := flag.String("url", "", "ws://127.0.0.1:PORT/ws")
	conns := flag.Int("c", 10, "connections")
	size := flag.Int("size", 32, "message size in bytes")
	pipeline := flag.Int("pipeline", 1, "messages in flight per connection")
	warmup := flag.Duration("warmup", time.Second, "not recorded")
	duration := flag.Duration("d", 5*time.Second, "recorded")
	flag.Parse()
	if *url == "" || *conns < 1 || *size < 1 || *pipeline < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "wsload: -url ws://HOST:PORT/PATH, and -c, -size, -pipeline, -d above 0")
		os.Exit(2)
	}
	message := bytes.Repeat([]byte("x"), *size)
	start := time.Now()
	from, end := start.Add(*warmup), start.Add(*warmup+*duration)
	var messages, mismatches, errors atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := websocket.DefaultDialer.Dial(*url, nil)
			if err != nil {
				errors.Add(1)
				return
			}
			defer c.Close()
			for time.Now().Before(end) {
				for k := 0; k < *pipeline; k++ {
					if err := c.WriteMessage(websocket.TextMessage, message); err != nil {
						errors.Add(1)
						return
					}
				}
				for k := 0; k < *pipeline; k++ {
					_, echo, err := c.ReadMessage()
					if err != nil {
						errors.Add(1)
						return
					}
					if !bytes.Equal(echo, message) {
						mismatches.Add(1)
					}
					if now := time.Now(); now.After(from) && now.Before(end) {
						messages.Add(1)
					}
				}
			}
			c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		}()
	}
	wg.Wait()
	seconds := duration.Seconds()
	out, _ := json.Marshal(map[string]any{
		"messages":   messages.Load(),
		"seconds":    seconds,
		"rate":       float64(messages.Load()) / seconds,
		"mismatches": mismatches.Load(),
		"errors":     errors.Load(),
	})
	fmt.Println(string(out))
	if mismatches.Load() > 0 || errors.Load() > 0 {
		os.Exit(1)
	}
}
