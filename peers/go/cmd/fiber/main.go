// Command fiber is framebench's Fiber v2 peer: the oracle's routes on Fiber (fasthttp), with
// Fiber's Static for static files and its logger middleware.
package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/logger"

	"framebench/peers/go/internal/app"
)

func main() {
	opts, fx, tmpl, store := app.Setup(os.Args[1:])
	if opts.Protocol == "h2c" || opts.Protocol == "h2" {
		// fasthttp, under Fiber, speaks HTTP/1 only (ws is HTTP/1.1's upgrade at /ws).
		app.Fail(2, fmt.Errorf("--protocol %s: fiber serves HTTP/1.1 only", opts.Protocol))
	}

	f := fiber.New(fiber.Config{
		DisableStartupMessage: true,
		IdleTimeout:           app.KeepAlive,
		ReadTimeout:           app.KeepAlive,
	})
	if out := opts.LogWriter(); out != nil {
		f.Use(logger.New(logger.Config{
			Output:     out,
			TimeFormat: "Mon, 02 Jan 2006 15:04:05 GMT",
			Format:     "${time} ${ip}:${port} \"${method} ${url}\" ${status} ${latency}\n",
		}))
	}
	f.Get("/", func(c *fiber.Ctx) error {
		return c.SendString("Hello, World!")
	})
	// WebSocket echo through Fiber's websocket middleware (fasthttp/websocket, gorilla's API):
	// every message back as it came; its default handlers answer a ping and a close.
	f.Get("/ws", websocket.New(func(c *websocket.Conn) {
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
	}))
	f.Get("/json", func(c *fiber.Ctx) error {
		// Fiber's c.JSON, which serializes with encoding/json on every call.
		return c.JSON(app.Message{Message: "Hello, World!"})
	})
	f.Get("/get", func(c *fiber.Ctx) error {
		// c.Query's string aliases fasthttp's buffer: used only before the handler returns.
		body, status := store.Get(c.UserContext(), c.Query("key"))
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Status(status).Send(body)
	})
	f.Get("/template", func(c *fiber.Ctx) error {
		body, err := tmpl.Render()
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		return c.Send(body)
	})
	f.Get("/sum", func(c *fiber.Ctx) error {
		// Fiber's QueryParser; its error (a missing or non-uint32 operand) is a plain error,
		// which Fiber's default error handler would answer 500, so it is answered 400 here.
		var ops app.Operands
		if err := c.QueryParser(&ops); err != nil {
			return fiber.ErrBadRequest
		}
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Send(app.SumText(ops))
	})
	f.Get("/delay", func(c *fiber.Ctx) error {
		// c.Query's string aliases fasthttp's buffer: parsed before the wait.
		args := c.Context().QueryArgs()
		wait, ok := app.WaitFor(c.Query("ms"), args.Has("ms"))
		if !ok {
			return fiber.ErrBadRequest
		}
		body := app.Delay(wait)
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Send(body)
	})
	// c.Body() is fasthttp's request body, read whole before the handler runs (a Content-Length
	// or a chunked one, up to Fiber's BodyLimit, 4 MiB by default; over it fasthttp answers
	// 413). It aliases fasthttp's buffer: used only before the handler returns.
	f.Post("/upload", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Send(app.Digest(c.Body()))
	})
	f.Post("/json_in", func(c *fiber.Ctx) error {
		// BodyParser picks its decoder by Content-Type (a type ending in "json": encoding/json's
		// Unmarshal); without one it answers 422. A body it cannot decode is answered 400.
		var ops app.Operands
		if err := c.BodyParser(&ops); err != nil {
			var fe *fiber.Error
			if errors.As(err, &fe) {
				return err
			}
			return fiber.ErrBadRequest
		}
		// Serialized with json.Marshal, as net/http's peer does, not with c.JSON.
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(app.JSONIn(ops))
	})
	f.Get("/paste/:name", func(c *fiber.Ctx) error {
		body, status := fx.Lookup(false, c.Params("name"), opts.IO)
		if status != 200 {
			return c.SendStatus(status)
		}
		c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
		return c.Send(body)
	})
	if opts.IO == "disk" {
		f.Static("/static", fx.StaticDir)
	} else {
		f.Get("/static/:name", func(c *fiber.Ctx) error {
			name := c.Params("name")
			body, status := fx.Lookup(true, name, "memory")
			if status != 200 {
				return c.SendStatus(status)
			}
			c.Set(fiber.HeaderContentType, app.ContentType(name))
			return c.Send(body)
		})
	}

	ln, err := opts.Listen()
	if err != nil {
		app.Fail(1, err)
	}
	opts.Announce(ln)
	if opts.TLS {
		// Fiber serves TLS on a listener of the caller's through crypto/tls's listener, as its
		// docs show for `app.Listener`; fasthttp completes each handshake on the connection's
		// own goroutine.
		cfg, err := app.TLSConfig(opts.Protocol)
		if err != nil {
			app.Fail(1, err)
		}
		ln = tls.NewListener(ln, cfg)
	}
	// fasthttp sets TCP_NODELAY through Go's net package default on accepted connections.
	if err := f.Listener(ln); err != nil {
		app.Fail(1, err)
	}
}
