# escape: kernel keyrings (keyctl/add_key/request_key): read the session/user keyrings, persist a key across runs
# expect: pass
# prelude: syscalls
SYS_add_key, SYS_request_key, SYS_keyctl = 248, 249, 250
KEYCTL_GET_KEYRING_ID, KEYCTL_READ = 0, 11
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -2, -3, -4
ALLOWED = (errno.EPERM, errno.ENOSYS)
expect("keyctl(GET_KEYRING_ID, session)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0))
expect("keyctl(GET_KEYRING_ID, user, create)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 1))
buf = ctypes.create_string_buffer(256)
expect("keyctl(READ, user keyring)", ALLOWED,
       lambda: syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_USER_KEYRING, buf, 256))
# The user keyring outlives the run: a key added here would be readable by the next run.
expect("add_key(user, mcp_escape)", ALLOWED,
       lambda: syscall(SYS_add_key, b"user", b"mcp_escape", b"x", 1, KEY_SPEC_USER_KEYRING))
expect_in_child("request_key(user, mcp_escape)", ALLOWED + (errno.ENOKEY,),
                lambda: syscall(SYS_request_key, b"user", b"mcp_escape", None, 0))
report()
