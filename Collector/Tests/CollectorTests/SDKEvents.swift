import CrashShieldProtocol
import Foundation

/// Events as real SDKs send them, for the issue page's tests.
enum SDKEvents {
    /// Sentry's Python SDK (sentry-sdk 2.75.0, default integrations, `send_default_pii=True`), as
    /// its transport received it: a `ValueError` raised through `json.loads` (stdlib frames,
    /// without `in_app`) in a scope with a user, a device context, extras, a breadcrumb with data and
    /// a request added by an event processor.
    static let sentryPython = #"""
{
 "level": "error",
 "exception": {
  "values": [
   {
    "mechanism": {
     "type": "generic",
     "handled": true
    },
    "module": null,
    "type": "ValueError",
    "value": "invalid literal for int() with base 10: 'not a number'",
    "stacktrace": {
     "frames": [
      {
       "filename": "capture.py",
       "abs_path": "/tmp/ip/capture.py",
       "function": "<module>",
       "module": "__main__",
       "lineno": 26,
       "pre_context": [
        "    event[\"request\"] = {\"url\": \"https://shop.example/checkout\", \"method\": \"POST\", \"query_string\": \"step=2&coupon=SPRING\", \"headers\": {\"User-Agent\": \"Mozilla/5.0\", \"Content-Type\": \"application/json\"}}",
        "    return event",
        "with sentry_sdk.new_scope() as scope:",
        "    scope.add_event_processor(add_request)",
        "    try:"
       ],
       "context_line": "        json.loads('{\"a\": 1}', object_hook=lambda d: parse_header(\"not a number\"))",
       "post_context": [
        "    except ValueError:",
        "        sentry_sdk.capture_exception()",
        "sentry_sdk.flush()"
       ],
       "vars": {
        "__name__": "'__main__'",
        "__doc__": "None",
        "__package__": "None",
        "__loader__": "<_frozen_importlib_external.SourceFileLoader object at 0x7fa75d932b90>",
        "__spec__": "None",
        "__annotations__": {},
        "__builtins__": "<module 'builtins' (built-in)>",
        "__file__": "'/tmp/ip/capture.py'",
        "__cached__": "None",
        "json": "<module 'json' from '/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py'>"
       },
       "in_app": true
      },
      {
       "filename": "__init__.py",
       "abs_path": "/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py",
       "function": "loads",
       "module": "json",
       "lineno": 359,
       "pre_context": [
        "        kw['parse_float'] = parse_float",
        "    if parse_int is not None:",
        "        kw['parse_int'] = parse_int",
        "    if parse_constant is not None:",
        "        kw['parse_constant'] = parse_constant"
       ],
       "context_line": "    return cls(**kw).decode(s)",
       "post_context": [],
       "vars": {
        "s": "'{\"a\": 1}'",
        "cls": "<class 'json.decoder.JSONDecoder'>",
        "object_hook": "<function <lambda> at 0x7fa75c6ae700>",
        "parse_float": "None",
        "parse_int": "None",
        "parse_constant": "None",
        "object_pairs_hook": "None",
        "kw": {
         "object_hook": "<function <lambda> at 0x7fa75c6ae700>"
        }
       }
      },
      {
       "filename": "json/decoder.py",
       "abs_path": "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py",
       "function": "decode",
       "module": "json.decoder",
       "lineno": 337,
       "pre_context": [
        "    def decode(self, s, _w=WHITESPACE.match):",
        "        \"\"\"Return the Python representation of ``s`` (a ``str`` instance",
        "        containing a JSON document).",
        "",
        "        \"\"\""
       ],
       "context_line": "        obj, end = self.raw_decode(s, idx=_w(s, 0).end())",
       "post_context": [
        "        end = _w(s, end).end()",
        "        if end != len(s):",
        "            raise JSONDecodeError(\"Extra data\", s, end)",
        "        return obj",
        ""
       ],
       "vars": {
        "self": "<json.decoder.JSONDecoder object at 0x7fa75c6aab10>",
        "s": "'{\"a\": 1}'",
        "_w": "<built-in method match of re.Pattern object at 0x7fa75d72ecf0>"
       }
      },
      {
       "filename": "json/decoder.py",
       "abs_path": "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py",
       "function": "raw_decode",
       "module": "json.decoder",
       "lineno": 353,
       "pre_context": [
        "        This can be used to decode a JSON document from a string that may",
        "        have extraneous data at the end.",
        "",
        "        \"\"\"",
        "        try:"
       ],
       "context_line": "            obj, end = self.scan_once(s, idx)",
       "post_context": [
        "        except StopIteration as err:",
        "            raise JSONDecodeError(\"Expecting value\", s, err.value) from None",
        "        return obj, end"
       ],
       "vars": {
        "self": "<json.decoder.JSONDecoder object at 0x7fa75c6aab10>",
        "s": "'{\"a\": 1}'",
        "idx": "0"
       }
      },
      {
       "filename": "capture.py",
       "abs_path": "/tmp/ip/capture.py",
       "function": "<lambda>",
       "module": "__main__",
       "lineno": 26,
       "pre_context": [
        "    event[\"request\"] = {\"url\": \"https://shop.example/checkout\", \"method\": \"POST\", \"query_string\": \"step=2&coupon=SPRING\", \"headers\": {\"User-Agent\": \"Mozilla/5.0\", \"Content-Type\": \"application/json\"}}",
        "    return event",
        "with sentry_sdk.new_scope() as scope:",
        "    scope.add_event_processor(add_request)",
        "    try:"
       ],
       "context_line": "        json.loads('{\"a\": 1}', object_hook=lambda d: parse_header(\"not a number\"))",
       "post_context": [
        "    except ValueError:",
        "        sentry_sdk.capture_exception()",
        "sentry_sdk.flush()"
       ],
       "vars": {
        "d": {
         "a": "1"
        }
       },
       "in_app": true
      },
      {
       "filename": "capture.py",
       "abs_path": "/tmp/ip/capture.py",
       "function": "parse_header",
       "module": "__main__",
       "lineno": 12,
       "pre_context": [
        "        for item in envelope.items:",
        "            if item.type == \"event\":",
        "                print(json.dumps(item.payload.json, indent=1))",
        "",
        "def parse_header(text):"
       ],
       "context_line": "    return int(text)",
       "post_context": [
        "",
        "sentry_sdk.init(dsn=\"http://k@127.0.0.1:1/1\", transport=Dump, release=\"py-app@3.2.1\", environment=\"staging\", send_default_pii=True, server_name=\"checkout-1\")",
        "sentry_sdk.set_user({\"id\": \"user-42\", \"email\": \"ada@example.com\", \"username\": \"ada\", \"ip_address\": \"203.0.113.9\", \"geo\": {\"city\": \"Vienna\", \"country_code\": \"AT\", \"region\": \"Vienna\"}})",
        "sentry_sdk.set_context(\"device\", {\"model\": \"iPhone15,2\", \"family\": \"iOS\"})",
        "sentry_sdk.set_extra(\"cart_items\", 3)"
       ],
       "vars": {
        "text": "'not a number'"
       },
       "in_app": true
      }
     ]
    }
   }
  ]
 },
 "event_id": "a8a5e395fd3a4fbda4899a3e3c695c6f",
 "timestamp": "2026-11-29T09:01:04.417192Z",
 "contexts": {
  "device": {
   "model": "iPhone15,2",
   "family": "iOS"
  },
  "trace": {
   "trace_id": "241f885434574b03af326fa5f7a927d8",
   "span_id": "a01af9b9fc35f6c0",
   "parent_span_id": null
  },
  "runtime": {
   "name": "CPython",
   "version": "3.11.7",
   "build": "3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0]"
  }
 },
 "user": {
  "id": "user-42",
  "email": "ada@example.com",
  "username": "ada",
  "ip_address": "203.0.113.9",
  "geo": {
   "city": "Vienna",
   "country_code": "AT",
   "region": "Vienna"
  }
 },
 "transaction_info": {},
 "extra": {
  "cart_items": 3,
  "feature_flags": {
   "new_checkout": true
  },
  "sys.argv": [
   "capture.py"
  ]
 },
 "breadcrumbs": {
  "values": [
   {
    "category": "http",
    "message": "GET /api/cart",
    "level": "info",
    "data": {
     "url": "https://shop.example/api/cart",
     "status_code": 200,
     "method": "GET"
    },
    "timestamp": "2026-11-29T09:01:04.416292Z",
    "type": "default"
   }
  ]
 },
 "modules": {
  "websocket-client": "1.9.2",
  "urllib3": "2.8.0",
  "wsproto": "1.3.2",
  "pip": "23.2.1",
  "selenium": "4.51.0",
  "certifi": "2026.10.19.post1",
  "setuptools": "65.5.0",
  "sentry-sdk": "2.75.0",
  "sniffio": "1.3.1",
  "sortedcontainers": "2.4.0",
  "idna": "3.20",
  "trio-websocket": "0.12.2",
  "pysocks": "1.7.1",
  "trio": "0.35.0",
  "attrs": "26.1.0",
  "outcome": "1.3.0.post0",
  "h11": "0.16.0",
  "typing_extensions": "4.16.0"
 },
 "request": {
  "url": "https://shop.example/checkout",
  "method": "POST",
  "query_string": "step=2&coupon=SPRING",
  "headers": {
   "User-Agent": "Mozilla/5.0",
   "Content-Type": "application/json"
  }
 },
 "release": "py-app@3.2.1",
 "environment": "staging",
 "server_name": "checkout-1",
 "sdk": {
  "name": "sentry.python",
  "version": "2.75.0",
  "packages": [
   {
    "name": "pypi:sentry-sdk",
    "version": "2.75.0"
   }
  ],
  "integrations": [
   "argv",
   "atexit",
   "dedupe",
   "excepthook",
   "logging",
   "modules",
   "stdlib",
   "threading"
  ]
 },
 "platform": "python"
}
"""#

    /// `sentryPython` parsed.
    static var sentryPythonEvent: JSONValue { try! JSONValue.parse(Data(sentryPython.utf8)) }
}
