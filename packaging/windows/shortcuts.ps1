# Keepmind shortcuts on Windows: the Start menu entry, and (with -Startup) start at login.
#   powershell -ExecutionPolicy Bypass -File packaging\windows\shortcuts.ps1 -App "C:\Program Files\Keepmind"
#   ... -Startup     also start Keepmind at login (the same as `keepmind autostart on`, as a shortcut)
#   ... -Remove      remove both shortcuts
# -App is the PyInstaller folder holding keepmind-tray.exe (built by packaging/pyinstaller/build.sh).
param(
    [Parameter(Mandatory = $true)][string]$App,
    [switch]$Startup,
    [switch]$Remove
)
$ErrorActionPreference = "Stop"
$target = Join-Path $App "keepmind-tray.exe"   # no console window
$places = @([Environment]::GetFolderPath("Programs"))
if ($Startup -or $Remove) { $places += [Environment]::GetFolderPath("Startup") }
$shell = New-Object -ComObject WScript.Shell
foreach ($folder in $places) {
    $link = Join-Path $folder "Keepmind.lnk"
    if ($Remove) {
        if (Test-Path $link) { Remove-Item $link; Write-Output "removed $link" }
        continue
    }
    if (-not (Test-Path $target)) { throw "$target not found: give -App the folder the build made" }
    $shortcut = $shell.CreateShortcut($link)
    $shortcut.TargetPath = $target
    $shortcut.WorkingDirectory = $App
    $shortcut.Description = "Keepmind: local long-term memory for LLM agents"
    $shortcut.IconLocation = "$target,0"
    $shortcut.Save()
    Write-Output "created $link"
}
