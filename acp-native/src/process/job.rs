//! Windows: every child acp-native starts (agent or terminal command) is put in a job object of
//! its own, created with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, so that ending the job ends the
//! child and everything it started ("the process group" of the Unix code). The jobs are kept
//! here by the child's pid, since the callers name a child by pid ([`super::signal_group`]).
//!
//! Memory bound: an entry is dropped (its handle closed) when its job is ended, and every
//! [`contain`] first forgets the jobs that have no process left, so the table holds at most the
//! jobs that still have a live process.
//!
//! Known gap: the child is assigned right after it started (`std` spawns it running), so a
//! grandchild it starts in its very first instants is outside the job.

use std::collections::HashMap;
use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::Mutex;

use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// The jobs of the children still running, by pid.
static JOBS: Mutex<Option<HashMap<u32, OwnedHandle>>> = Mutex::new(None);

/// The exit code a process ended through its job gets (`1`, as `taskkill /F` gives).
const KILLED_EXIT_CODE: u32 = 1;

/// Puts `child` in a new job object (killed with everything in it when the job's last handle
/// closes, or by [`terminate`]).
pub(crate) fn contain(child: &tokio::process::Child) -> io::Result<()> {
    let (Some(pid), Some(process)) = (child.id(), child.raw_handle()) else {
        return Ok(()); // already reaped
    };
    // SAFETY: no security attributes, no name: plain calls without pointers to our memory.
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a handle CreateJobObjectW just returned, owned by nobody else.
    let job = unsafe { OwnedHandle::from_raw_handle(raw) };
    // SAFETY: zeroed is a valid value of this plain C struct.
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `limits` is the struct this information class takes, with its size.
    let ok = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both handles are open for the duration of the call.
    if unsafe { AssignProcessToJobObject(job.as_raw_handle(), process) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let mut jobs = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let jobs = jobs.get_or_insert_with(HashMap::new);
    jobs.retain(|_, job| active_processes(job) != Some(0));
    jobs.insert(pid, job);
    Ok(())
}

/// Ends the job of the child `pid` (everything in it) and forgets it; nothing if unknown.
pub(crate) fn terminate(pid: u32) -> io::Result<()> {
    let job = {
        let mut jobs = JOBS.lock().unwrap_or_else(|e| e.into_inner());
        jobs.as_mut().and_then(|jobs| jobs.remove(&pid))
    };
    let Some(job) = job else { return Ok(()) };
    // SAFETY: an open job handle.
    if unsafe { TerminateJobObject(job.as_raw_handle(), KILLED_EXIT_CODE) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How many processes are in the job (`None`: the query failed).
fn active_processes(job: &OwnedHandle) -> Option<u32> {
    // SAFETY: zeroed is a valid value of this plain C struct.
    let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is writable memory of the size passed, the struct this class fills.
    let ok = unsafe {
        QueryInformationJobObject(
            job.as_raw_handle(),
            JobObjectBasicAccountingInformation,
            (&mut info as *mut JOBOBJECT_BASIC_ACCOUNTING_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
            std::ptr::null_mut(),
        )
    };
    (ok != 0).then_some(info.ActiveProcesses)
}
