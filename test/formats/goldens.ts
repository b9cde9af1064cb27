/**
 * Stream goldens copied verbatim from docs/reference (the SSE bytes,
 * blank lines included). Do not reformat: tests compare encoder output to them
 * byte for byte.
 */

/** docs/reference/anthropic-messages.md §5.3: text answer */
export const ANTHROPIC_TEXT_STREAM = String.raw`event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}

event: message_stop
data: {"type":"message_stop"}

`

/** docs/reference/anthropic-messages.md §5.4: text followed by a tool call */
export const ANTHROPIC_TOOL_STREAM = String.raw`event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check that."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`

/** docs/reference/anthropic-messages.md §5.5: error during a stream */
export const ANTHROPIC_ERROR_STREAM = String.raw`event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`

/** docs/reference/openai-chat.md §5.4: text answer with include_usage */
export const OPENAI_TEXT_STREAM = String.raw`data: {"id":"chatcmpl-9Xa1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_6dc10860e8","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xa1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_6dc10860e8","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xa1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_6dc10860e8","choices":[{"index":0,"delta":{"content":" there!"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xa1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_6dc10860e8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-9Xa1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_6dc10860e8","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

`

/** docs/reference/openai-chat.md §5.5: two parallel tool calls */
export const OPENAI_TOOLS_STREAM = String.raw`data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_W1","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_T2","type":"function","function":{"name":"get_time","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\": \"Europe/Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-9Xb2","object":"chat.completion.chunk","created":1735689700,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":95,"completion_tokens":41,"total_tokens":136}}

data: [DONE]

`

/** docs/reference/openai-chat.md §5.6: error in the middle of a stream */
export const OPENAI_ERROR_STREAM = String.raw`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}

`

/** docs/reference/translation.md §9 worked example: ANTHROPIC_TOOL_STREAM for a Chat caller with include_usage */
export const OPENAI_FROM_ANTHROPIC_TOOL_STREAM = String.raw`data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"content":"Let me check that."},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Pa"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ris\"}"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U","object":"chat.completion.chunk","created":1735690000,"model":"claude-sonnet-4-5-20250929","choices":[],"usage":{"prompt_tokens":472,"completion_tokens":89,"total_tokens":561,"prompt_tokens_details":{"cached_tokens":0}}}

data: [DONE]

`

/** docs/reference/translation.md §10 worked example: OPENAI_TOOLS_STREAM for an Anthropic caller */
export const ANTHROPIC_FROM_OPENAI_TOOLS_STREAM = String.raw`event: message_start
data: {"type":"message_start","message":{"id":"msg_chatcmpl-9Xb2","type":"message","role":"assistant","model":"gpt-4o-2024-08-06","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_W1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ty\": \"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_T2","name":"get_time","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"tz\": \"Europe/Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":95,"output_tokens":41}}

event: message_stop
data: {"type":"message_stop"}

`
